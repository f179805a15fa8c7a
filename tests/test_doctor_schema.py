"""The typed doctor report (generator/commands/doctor/report.py) and its published JSON Schema
agree at every depth, both ways (tests/typed_schema.py), and a report written as JSON is valid
against the schema and reads back as the same value."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema

from tasgen.commands.doctor.report import Component, DoctorFinding, DoctorReport, summary_of
from tasgen.util.typed_json import from_json, to_json
from tests.typed_schema import disagreements

SCHEMA: dict[str, Any] = json.loads(
    resources.files("tasgen").joinpath("schemas", "doctor-report.schema.json").read_text()
)


def test_the_report_type_and_its_schema_agree() -> None:
    assert disagreements(DoctorReport, SCHEMA) == []


def test_a_report_is_valid_json_of_the_schema_and_reads_back() -> None:
    findings = (
        DoctorFinding(check="node-missing", level="error", subject="Node a", problem="absent", fix="join it"),
        DoctorFinding(
            check="quantity-form", level="warning", subject="ClusterQueue q", problem="2k", fix="none"
        ),
    )
    report = DoctorReport(
        version=1,
        server="https://127.0.0.1:6443",
        engine=None,
        revision=None,
        components=(
            Component(name="kueue", version="v0.17.0", deployment="kueue-system/kueue-controller-manager"),
            Component(name="nfd-master", version=None, deployment=None),
        ),
        checks=("nodes",),
        findings=findings,
        summary=summary_of(findings),
    )
    document = to_json(report)
    jsonschema.validate(document, SCHEMA)
    assert document["summary"] == {"errors": 1, "warnings": 1}
    assert from_json(DoctorReport, json.loads(json.dumps(document))) == report
