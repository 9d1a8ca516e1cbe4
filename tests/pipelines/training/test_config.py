"""TrainConfig's checks: one rule per field, in the order of the fields, so that a field added without
its rule (or a rule left for a field removed) fails here rather than passing unchecked."""

from axialrope.pipelines.training.config import FIELD_RULES, TrainConfig


def test_every_field_has_its_rule_in_the_order_of_the_fields():
    assert list(FIELD_RULES) == TrainConfig.field_names()


def test_the_defaults_pass_their_rules(tmp_path):
    assert TrainConfig(output_dir=str(tmp_path / "run")).validate().output_dir == str(tmp_path / "run")
