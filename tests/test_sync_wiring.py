"""The engines' wiring: the Flux chain of rendered/flux/."""

from __future__ import annotations

import pytest

from generator.plan.sync_wiring import flux_chain


@pytest.mark.parametrize("repo_path", ["./rendered", "./clusters/prod/rendered/"])
def test_flux_chain(repo_path: str) -> None:
    found = {m.file: m.body for m in flux_chain(repo_path, "flux-system", "flux-system", 600)}
    chain = [found[f"flux/{f}.yaml"] for f in ("labels", "kueue", "gate", "queues")]
    assert [k["spec"]["path"] for k in chain] == [
        f"{repo_path.rstrip('/')}/{f}" for f in ("labels", "kueue", "gate", "queues")
    ]
    assert [k["spec"].get("dependsOn") for k in chain] == [
        None,
        [{"name": "tasgen-labels"}],
        [{"name": "tasgen-kueue"}],
        [{"name": "tasgen-gate"}],
    ]
    assert all(k["spec"]["wait"] and k["spec"]["prune"] for k in chain)
    assert [k["spec"].get("force", False) for k in chain] == [False, False, True, False]
    assert chain[2]["spec"]["timeout"] == "780s"
