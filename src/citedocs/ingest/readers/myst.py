"""MyST Markdown pages of a Sphinx site, parsed by myst-parser into the same doctree as reST.

myst-parser (the parser Sphinx itself runs for ``.md`` when ``conf.py`` names ``myst_parser`` or
``myst_nb``) builds a docutils document without Sphinx, with the ids Sphinx publishes: a heading's
section gets docutils' ``make_id`` of its title, ``(label)=`` before it puts the label first (its
``PrioritiseExplicitIds`` transform), and ``myst_heading_anchors`` adds GitHub-style slugs as
further ids. Its directives and roles are looked up through docutils, so the reST reader's Sphinx
markup handlers serve both dialects, and the doctree goes through the same section walk.
"""

from __future__ import annotations

import json

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from docutils.parsers.rst.directives.misc import Include as DocutilsInclude
from myst_parser.mocking import MockIncludeDirective

from . import MystOptions
from .rst_markup import CodeBlock, Include, resolve_inside_root


class MystInclude(Directive):
    """``{include}`` in a MyST page: a file inside the docs folder only (as reST's include), then
    read by myst-parser's own include, which parses it as MyST where it stands.

    Not a docutils ``Include`` subclass: myst-parser hands those straight to its own include,
    before any check could run. Written inside ``{eval-rst}``, it is reST's include.
    """

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {
        **DocutilsInclude.option_spec,
        "relative-images": directives.flag,
        "relative-docs": directives.path,
        "heading-offset": directives.nonnegative_int,
    }

    def run(self) -> list[nodes.Node]:
        renderer = getattr(self.state, "_renderer", None)  # myst-parser's MockState has one
        if renderer is None:
            rst = Include(self.name, self.arguments, self.options, self.content, self.lineno, self.content_offset, self.block_text, self.state, self.state_machine)
            return rst.run()
        path = resolve_inside_root(self, self.arguments[0], "include")
        if path is None:
            return []
        arguments = [str(path)]
        return MockIncludeDirective(renderer, self.name, DocutilsInclude, arguments, self.options, list(self.content), self.lineno).run()


# MyST's own directives, beside the Sphinx markup both dialects share: myst-nb's ``code-cell`` (a
# text notebook's cell) is shown as its code
MARKUP = {"include": MystInclude, "code-cell": CodeBlock}


_TYPOGRAPHY = {"smartquotes", "replacements"}  # curly quotes, dashes: text stays as written, as reST is read


def myst_settings(myst: MystOptions) -> dict:
    """conf.py's ``myst_*`` values as docutils settings (myst-parser's docutils parser reads the names
    Sphinx's config does), less typography; code is left unhighlighted (the text is the same)."""
    settings = {name: json.loads(value) for name, value in myst.settings}
    extensions = set(settings.get("myst_enable_extensions", ())) - _TYPOGRAPHY
    return {
        **settings,
        "myst_enable_extensions": sorted(extensions),
        "myst_highlight_code_blocks": False,
        "raw_enabled": True,  # HTML blocks stay raw nodes, which are not text; disabled, each is a warning
        "docinfo_xform": True,  # front matter is page metadata: as in Sphinx, docinfo, not page text
    }
