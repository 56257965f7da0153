"""The bundled models are what the book says they are: each GGUF file's own metadata against ``llm.provenance``."""

import pytest

from ace_helpers.llm import provenance
from ace_helpers.llm.loading import unavailable_reason
from ace_helpers.llm.offline import OFFLINE_MODELS, _gguf_source


@pytest.mark.parametrize("name", sorted(provenance.PROVENANCE))
def test_each_bundled_gguf_says_what_the_provenance_table_says(name, tmp_path):
    if unavailable_reason(name) is not None and "not installed" in (unavailable_reason(name) or ""):
        pytest.skip(f"{name} is not installed here")
    facts = provenance.gguf_facts(_gguf_source(name, tmp_path))
    assert provenance.check_provenance(name, facts) == [], facts


def test_every_bundled_model_has_its_provenance_and_departures():
    assert set(provenance.PROVENANCE) == set(OFFLINE_MODELS)
    assert provenance.model_departures("qwen2.5-0.5b") == ["Q4_K_M quantised instruct checkpoint, dequantised to float32",
                                                           "Coder variant"]
    assert provenance.model_departures("gemma3-270m") == ["Q4_K_M quantised base checkpoint, dequantised to float32"]
    assert provenance.model_departures("my-own-model") == []


def test_a_contradicting_file_is_reported():
    facts = {"file_type": 1, "finetune": "", "name": "Qwen2.5 0.5B", "chat_template": False}
    bad = provenance.check_provenance("qwen2.5-0.5b", facts)
    assert len(bad) == 3 and "Q4_K_M" in bad[0] and "instruct" in bad[1] and "Coder" in bad[2]
