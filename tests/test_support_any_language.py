"""The support check reads claims in every script as strictly as English ones (real bi-encoder,
chunks quoted from the translated VitePress docs in evals/corpora/vitepress-i18n-docs, and an Arabic one)."""

from __future__ import annotations

import pytest

from citedocs.models.encoders import bi_encoder
from citedocs.types import Chunk, ChunkId
from citedocs.validate.support import SupportChecker
from citedocs.validate.thresholds import load_thresholds
from citedocs.validate.validator import CitationValidator


def _chunk(path: str, anchor: str, title: str, heading: str, text: str) -> Chunk:
    return Chunk(
        id=ChunkId(f"{path}#{anchor}/1"),
        doc_path=f"{path}.md",
        title=title,
        heading_path=(heading,),
        anchor=anchor,
        anchor_path=(anchor,),
        url=f"https://example.org/{path}#{anchor}",
        text=text,
        token_count=120,
    )


RU_APPEARANCE = _chunk(
    "ru/reference/site-config",
    "appearance",
    "Конфигурация сайта",
    "appearance",
    "- Тип: `boolean | 'dark' | 'force-dark' | 'force-auto' | import('@vueuse/core').UseDarkOptions`\n"
    "- По умолчанию: `true`\n\n"
    "Включать ли тёмный режим (путём добавления класса `.dark` к элементу `<html>`).\n\n"
    "- Если установить значение `false`, пользователи не смогут переключать тему.\n"
    "- Если для опции установлено значение `force-dark`, тема всегда будет темной, и пользователи не смогут её переключать.\n\n"
    "Ссылки или геттеры не поддерживаются.\n",
)
ZH_APPEARANCE = _chunk(
    "zh/reference/site-config",
    "appearance",
    "站点配置",
    "appearance",
    "- 类型：`boolean | 'dark' | 'force-dark' | import('@vueuse/core').UseDarkOptions`\n"
    "- 默认值： `true`\n\n"
    "是否启用深色模式 (通过将 `.dark` 类添加到 `<html>` 元素)。\n\n"
    "- 如果该选项设置为 `dark`，则默认情况下主题将是深色的，除非用户手动切换它。\n"
    "- 如果该选项设置为 `false`，用户将无法切换主题。\n\n"
    "此选项注入一个内联脚本，从本地存储恢复用户设置。\n",
)
AR_APPEARANCE = _chunk(
    "ar/reference/site-config",
    "appearance",
    "إعدادات الموقع",
    "appearance",
    "يفعّل الخيار `appearance` الوضع الداكن بإضافة الصنف `.dark` إلى العنصر `<html>`.\n\n"
    "إذا كانت قيمة الخيار `force-dark` فلن يتمكن المستخدمون من تبديل السمة.\n",
)
EN_NUMBERS = _chunk(
    "guides/performance",
    "results",
    "Performance",
    "Results",
    "On the benchmark the median latency was 0.15-0.16 seconds per query.\n\n"
    "Compiling the templates made rendering 1.4x-2x faster than the interpreted mode.\n",
)


@pytest.fixture(scope="module")
def checker() -> SupportChecker:
    return SupportChecker(bi_encoder(), load_thresholds())


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        ("Если для опции `appearance` установлено значение `force-dark`, все страницы сайта будут удалены.", RU_APPEARANCE),
        ("Опция appearance со значением force-dark удаляет все страницы сайта.", RU_APPEARANCE),
        ("如果 `appearance` 设置为 `force-dark`，网站的所有页面都会被删除。", ZH_APPEARANCE),
        ("الخيار `appearance` بالقيمة `force-dark` يحذف جميع صفحات الموقع.", AR_APPEARANCE),
    ],
)
def test_fabricated_claim_sharing_only_option_names_is_unsupported(checker, claim, chunk):
    verdict = checker.check(claim, [chunk])
    assert not verdict.supported, verdict
    assert verdict.coverage < 1.0


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        # the "не" moved: the same words, the opposite meaning
        ("Если для опции установлено значение `force-dark`, тема не всегда будет темной, и пользователи смогут её переключать.", RU_APPEARANCE),
        # the "не" dropped
        ("Если установить значение `false`, пользователи смогут переключать тему.", RU_APPEARANCE),
        # 无法 (cannot) replaced by 可以 (can)
        ("如果该选项设置为 `false`，用户将可以切换主题。", ZH_APPEARANCE),
        # فلن (will not) dropped
        ("إذا كانت قيمة الخيار `force-dark` يتمكن المستخدمون من تبديل السمة.", AR_APPEARANCE),
    ],
)
def test_negated_claim_is_unsupported(checker, claim, chunk):
    assert not checker.check(claim, [chunk]).supported


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        ("Если для опции установлено значение `force-dark`, тема всегда будет темной, и пользователи не смогут её переключать.", RU_APPEARANCE),
        ("Включать ли тёмный режим (путём добавления класса `.dark` к элементу `<html>`).", RU_APPEARANCE),
        ("如果该选项设置为 `false`，用户将无法切换主题。", ZH_APPEARANCE),
        ("إذا كانت قيمة الخيار `force-dark` فلن يتمكن المستخدمون من تبديل السمة.", AR_APPEARANCE),
        # no identifier at all: only the words of the language carry it
        ("Ссылки или геттеры не поддерживаются.", RU_APPEARANCE),
        ("此选项注入一个内联脚本，从本地存储恢复用户设置。", ZH_APPEARANCE),
    ],
)
def test_sentence_quoted_from_the_passage_is_supported(checker, claim, chunk):
    verdict = checker.check(claim, [chunk])
    assert verdict.supported, verdict
    assert verdict.coverage == 1.0


def test_a_paraphrase_in_a_language_the_encoder_cannot_read_fails_safe(checker):
    verdict = checker.check("Пользователи не смогут переключать тему, если значение равно `false`.", [RU_APPEARANCE])
    assert not verdict.supported
    assert verdict.language == "ru" and "cannot read its language (ru)" in verdict.reason()


@pytest.mark.parametrize(
    "claim",
    [
        "On the benchmark the median latency was 0.15-0.16 seconds per query.",
        "Compiling the templates made rendering 1.4x-2x faster than the interpreted mode.",
    ],
)
def test_verbatim_quote_with_a_number_range_is_supported(checker, claim):
    verdict = checker.check(claim, [EN_NUMBERS])
    assert verdict.supported, verdict.reason()


def test_a_number_inside_a_range_is_found_but_an_invented_one_is_not(checker):
    assert not checker.check("The median latency was 0.15 seconds per query.", [EN_NUMBERS]).missing_specifics
    assert checker.check("The median latency was 0.25 seconds per query.", [EN_NUMBERS]).missing_specifics == ["0_25"]


def test_validator_keeps_a_russian_quote_and_drops_a_russian_fabrication(checker):
    validator = CitationValidator(checker)
    cited = f"[{RU_APPEARANCE.id}]"
    result = validator.validate(
        "Если для опции установлено значение `force-dark`, тема всегда будет темной, и пользователи не смогут её "
        f"переключать. {cited} Опция appearance со значением force-dark удаляет все страницы сайта. {cited}",
        [RU_APPEARANCE],
    )
    assert [d.action for d in result.decisions] == ["kept", "dropped"]
