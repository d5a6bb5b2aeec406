"""One enum per shared word: read in any case, printed in one spelling."""

import pytest

from rte.errors import ConfigError
from rte.model.vocabulary import FingerprintMethod, InformerMode


@pytest.mark.parametrize("text", ["Dedicated", "dedicated", "DEDICATED"])
def test_the_informer_mode_is_read_in_any_case(text: str) -> None:
    mode = InformerMode.parse(text, "--informer-mode")
    assert mode is InformerMode.DEDICATED
    assert str(mode) == "Dedicated"  # the scheduler plugin's spelling, whatever was typed


@pytest.mark.parametrize("text", ["with-exclusive-resources", "With-Exclusive-Resources"])
def test_the_fingerprint_method_is_read_in_any_case_and_printed_as_the_nrt_attribute_value(text: str) -> None:
    method = FingerprintMethod.parse(text, "RTE_FINGERPRINT_METHOD")
    assert method is FingerprintMethod.WITH_EXCLUSIVE_RESOURCES
    assert f"{method}" == "with-exclusive-resources"


@pytest.mark.parametrize("value", ["private", "", None, 1])
def test_an_unknown_spelling_is_a_one_line_error_naming_the_source_and_the_choices(value: object) -> None:
    with pytest.raises(ConfigError) as e:
        InformerMode.parse(value, "cache.informerMode")
    assert str(e.value) == f"cache.informerMode: {value!r} is not one of Dedicated, Shared"
    assert "\n" not in str(e.value)


def test_members_are_not_mistaken_for_their_neighbours_spelling() -> None:
    with pytest.raises(ConfigError):
        FingerprintMethod.parse("with_exclusive_resources", "--method")
