"""JSON files: indented, every array of numbers on one line, the content unchanged."""
import json

from hypothesis import given
from hypothesis import strategies as st

from ib_tutorial.files import json_text, write_json_atomic

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@given(VALUES)
def test_the_text_reads_back_as_the_data(data):
    assert json.loads(json_text(data)) == data


def test_arrays_of_numbers_take_one_line_and_strings_are_left_alone(tmp_path):
    data = {"replicates": [[1.5, -2e-05], [3, 4]], "label": "[1,  2]", "names": ["a", "b"], "empty": []}
    text = json_text(data)
    assert '    [1.5, -2e-05],\n    [3, 4]\n' in text
    assert '"label": "[1,  2]"' in text  # a string that looks like an array keeps its spaces
    assert '"names": [\n    "a",\n    "b"\n  ]' in text
    write_json_atomic(tmp_path / "record.json", data)
    assert (tmp_path / "record.json").read_text() == text
