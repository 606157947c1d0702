"""The import layering that the package docstrings and docs/explanation/architecture.md describe is
the one the code has: import-linter checks the contracts in pyproject.toml over this checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "citedocs"
ARCHITECTURE = ROOT / "docs" / "explanation" / "architecture.md"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def layered_modules() -> set[str]:
    """Every module named in the top-level layers contract."""
    (top,) = [c for c in contracts() if "containers" not in c]
    return {name.strip().removeprefix("citedocs.") for layer in top["layers"] for name in layer.split("|")}


def lint_imports(source_root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` over the package found in ``source_root`` (not the installed one)."""
    if not LINT_IMPORTS.exists():
        pytest.fail(f"{LINT_IMPORTS} is missing: pip install import-linter (pinned in pyproject.toml's test extra)")
    return subprocess.run(
        [str(LINT_IMPORTS), str(ROOT / "pyproject.toml"), "--no-cache"],
        env={**os.environ, "PYTHONPATH": str(source_root), "COLUMNS": "200"},
        cwd=source_root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_code_keeps_the_documented_import_layers():
    result = lint_imports(PACKAGE.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken." in result.stdout


def test_a_pipeline_stage_importing_the_service_breaks_the_layers(tmp_path: Path):
    copy = tmp_path / "citedocs"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("static", "__pycache__", "*.toml", "data", "prompts"))
    base = copy / "generate" / "base.py"
    base.write_text(base.read_text() + "\nfrom ..service import Services  # a stage reaching up\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1
    assert "citedocs.generate.base -> citedocs.service" in result.stdout
    assert "0 kept" not in result.stdout and "1 broken" in result.stdout


def test_every_module_of_citedocs_has_a_place_in_the_layers():
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert modules | packages == layered_modules()


def test_every_package_says_what_it_is_for_and_what_it_may_import():
    import ast

    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "Layer:" in doc and ("May import" in doc or "imports only" in doc), f"{init.relative_to(ROOT)}: {doc!r}"


def test_the_architecture_page_links_every_layer_to_its_code():
    page = ARCHITECTURE.read_text()
    for name in sorted(layered_modules()):
        target = f"src/citedocs/{name}/" if (PACKAGE / name).is_dir() else f"src/citedocs/{name}.py"
        assert target in page, f"{ARCHITECTURE.name} does not link {target}"
