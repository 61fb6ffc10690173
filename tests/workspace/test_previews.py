"""``crank/tree``'s one-line previews: the whitespace of a message collapsed and cut to
``PREVIEW_CHARS``. Only a head of the text is collapsed (a tool result can be 20,000
characters and the tree makes one preview per message); the preview must be what
collapsing the whole text gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from crank.workspace.sessions import PREVIEW_CHARS, preview_of


def collapsed_whole(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet="ab ", max_size=60),
            st.text(alphabet=" \n\t", min_size=50, max_size=3_000),  # long runs of blanks
            st.text(alphabet="xyz", min_size=50, max_size=700),  # long words
        ),
        max_size=12,
    )
)
def test_a_preview_reads_as_the_whole_text_collapsed(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert preview_of({"role": "user", "content": text}) == collapsed_whole(text)


def test_a_long_result_is_previewed_from_its_head() -> None:
    text = "word " * 10 + " " * 5_000 + "tail " * 10_000
    assert preview_of({"role": "toolResult", "content": text}) == collapsed_whole(text)
    assert preview_of({"role": "user", "content": "  a\n\n b  "}) == "a b"
