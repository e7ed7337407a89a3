"""Text prepared for speech: what a listener hears instead of Markdown."""

from __future__ import annotations

from core.tts.prepare import prepare


def test_code_blocks_become_a_short_note() -> None:
    md = "Run this:\n\n```python\nimport os\n\nprint(os.getcwd())\nx = 1\n```\n\nThen restart it."
    p = prepare(md)
    assert p.text == "Run this: Code block, 3 lines, omitted. Then restart it."
    assert p.code_blocks == 1
    assert not p.mostly_code


def test_one_line_block_and_an_unclosed_fence() -> None:
    assert "Code block, 1 line, omitted." in prepare("See:\n```\nls\n```").text
    assert prepare("Start\n```sh\nls\nrm -rf build").text == "Start Code block, 2 lines, omitted."


def test_mostly_code_answers_are_flagged() -> None:
    code = "\n".join(f"    line_{i} = compute({i})" for i in range(30))
    assert prepare(f"Here:\n```python\n{code}\n```").mostly_code
    assert not prepare("No code at all, just words.").mostly_code


def test_links_are_read_as_their_text() -> None:
    p = prepare(
        "See [the deploy guide](https://example.com/x) or <https://docs.example.org/a|docs>."
    )
    assert p.text == "See the deploy guide or docs."
    assert prepare("Go to https://www.example.com/a/b?c=1 now").text == (
        "Go to a link to example.com now"
    )
    assert prepare("![diagram](https://x/y.png)").text == "diagram"


def test_markdown_marks_and_emoji_are_left_out() -> None:
    md = (
        "# Status\n\n**Bold** and *italic* and ~~gone~~ and `code_name` 🚀 :rocket: ✅"
        "\n\n---\n> quoted"
    )
    assert prepare(md).text == "Status. Bold and italic and gone and code_name quoted"


def test_snake_case_keeps_its_underscores() -> None:
    assert prepare("call load_user_data first").text == "call load_user_data first"


def test_lists_become_sentences() -> None:
    assert prepare("Steps:\n- build\n- test!\n1. ship").text == "Steps: build. test! ship."


def test_small_tables_are_read_by_row_and_big_ones_announced() -> None:
    small = "| name | value |\n|---|---|\n| a | 1 |\n| b | 2 |"
    assert prepare(small).text == "name, value. a, 1. b, 2."
    rows = "\n".join(f"| r{i} | {i} |" for i in range(10))
    big = f"| name | value |\n|---|---|\n{rows}"
    assert prepare(big).text == "Table, 11 rows, omitted."


def test_cjk_and_accents_pass_through() -> None:
    assert prepare("今日は**晴れ**です。Café naïve.").text == "今日は晴れです。Café naïve."


def test_which_messages_read_like_a_request_for_audio() -> None:
    from core.tts.tool import asks_for_voice

    for text in (
        "read it aloud please",
        "send me a voice version",
        "can I listen to this?",
        "Lis-moi ça à voix haute",
        "bitte vorlesen",
        "请用语音回答",
        "🔊",
    ):
        assert asks_for_voice(text), text
    for text in ("what is the status?", "where is the speaker config?", "这个概念是什么"):
        assert not asks_for_voice(text), text


def test_pathological_answers_are_prepared_in_one_pass() -> None:
    """A model's answer of 20,000 brackets, newlines or backticks used to be rescanned from
    every position (6-12 s each); the patterns now stop at the next bracket or run, so these
    come back at once and the suite would crawl if that regressed."""
    for text in ("[" * 20_000, "![" * 10_000, "`" * 20_000, "[a](" * 5_000):
        assert prepare(text).text == text  # no link, image or code span closes: kept as is
    assert prepare("\n" * 20_000).text == ""
    assert prepare("See [the docs](https://x.y/a) and `code`.").text == "See the docs and code."


def test_long_digit_runs_are_read_as_their_length() -> None:
    # A hundred 9s took 37 s to read aloud.
    assert prepare(f"The id is {'9' * 100}.").text == "The id is a number with 100 digits."
    assert prepare("Total: 1,234,567,890,123,456,789,000 units").text == (
        "Total: a number with 22 digits units"
    )
    assert prepare("pi is 3.14159265358979323846").text == "pi is a number with 21 digits"
    # Numbers people say stay as they are: up to 15 digits, lists, versions, times.
    kept = "Call 123456789012345, ports 8000,8001 and 1,2,3 at 12:30 on v3.11.7 for $1,000,000."
    assert prepare(kept).text == kept
    # In a table cell too.
    assert prepare(f"| id |\n|---|\n| {'7' * 40} |").text == "id. a number with 40 digits."
