"""`tasgen fetch` against real HTTPS servers on 127.0.0.1 with a CA made in the test."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tasgen.commands.fetch import credentials
from tests.conftest import NOW, Run, tasgen
from tests.fetch.conftest import SNAPSHOT_FILE, SOURCE_FILE, TOKEN, point_source, snapshot
from tests.fetch.endpoints import Authority, Endpoint, RawListener, trickle

Serve = Callable[..., Endpoint]


def answer(body: Any, status: int = 200, **headers: str) -> Callable[[Any], Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return lambda _handler: (status, {"Content-Type": "application/json", **headers}, data)


def fetch(inventory: Path, secrets: Path, *args: str) -> Run:
    return tasgen("fetch", "-i", str(inventory), "--secrets-dir", str(secrets), "--now", NOW, *args)


def assert_no_credential_anywhere(run: Run, root: Path, secrets: Path) -> None:
    """The token is in no output and in no file outside the Secret's own folder."""
    assert TOKEN not in run.output
    for path in root.rglob("*"):
        if path.is_file() and secrets not in path.parents:
            assert TOKEN.encode() not in path.read_bytes(), path


def test_bearer_token_answer_is_validated_and_committed_canonically(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path, tmp_path: Path
) -> None:
    endpoint = serve(answer(snapshot("inv-9000"), ETag='"v1"'))
    point_source(inventory, endpoint.url(), ca)
    run = fetch(inventory, secrets)
    assert run.exit_code == 0, run.output
    assert "l40s-inventory: updated (revision inv-9000)" in run.output
    (request,) = endpoint.seen.requests
    assert request["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert request["path"] == "/v1/topology/l40s"
    written = (inventory / SNAPSHOT_FILE).read_text()
    assert written == json.dumps(snapshot("inv-9000"), indent=2, sort_keys=True) + "\n"
    assert tasgen("validate", "-i", str(inventory), "--now", NOW).exit_code == 0
    assert_no_credential_anywhere(run, tmp_path, secrets)


def test_an_unchanged_topology_gives_no_diff_however_it_is_formatted(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    compact = json.dumps(snapshot("inv-9000"), separators=(",", ":")).encode()
    reordered = json.dumps(dict(reversed(list(snapshot("inv-9000").items()))), indent=7).encode()
    bodies = iter([compact, reordered])
    endpoint = serve(lambda _h: (200, {}, next(bodies)))
    point_source(inventory, endpoint.url(), ca)
    assert fetch(inventory, secrets).exit_code == 0
    first = (inventory / SNAPSHOT_FILE).read_bytes()
    run = fetch(inventory, secrets)
    assert run.exit_code == 0
    assert "l40s-inventory: unchanged (revision inv-9000)" in run.output
    assert (inventory / SNAPSHOT_FILE).read_bytes() == first


def test_etag_is_sent_back_and_304_means_unchanged(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    def respond(handler: Any) -> Any:
        if handler.headers.get("If-None-Match") == '"v1"':
            return 304, {"ETag": '"v1"'}, b""
        return answer(snapshot("inv-9000"), ETag='"v1"')(handler)

    endpoint = serve(respond)
    point_source(inventory, endpoint.url(), ca)
    assert fetch(inventory, secrets).exit_code == 0
    committed = (inventory / SNAPSHOT_FILE).read_bytes()
    run = fetch(inventory, secrets)
    assert run.exit_code == 0
    assert "l40s-inventory: unchanged (revision inv-9000)" in run.output
    assert endpoint.seen.requests[1]["headers"]["If-None-Match"] == '"v1"'
    assert (inventory / SNAPSHOT_FILE).read_bytes() == committed


def test_a_hand_edited_snapshot_is_not_kept_alive_by_its_etag(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    endpoint = serve(answer(snapshot("inv-9000"), ETag='"v1"'))
    point_source(inventory, endpoint.url(), ca)
    assert fetch(inventory, secrets).exit_code == 0
    edited = json.dumps(snapshot("hand-edit"), indent=2, sort_keys=True) + "\n"
    (inventory / SNAPSHOT_FILE).write_text(edited)
    run = fetch(inventory, secrets)
    assert "If-None-Match" not in endpoint.seen.requests[1]["headers"]
    assert "l40s-inventory: updated (revision inv-9000)" in run.output


def test_client_certificate_from_a_tls_secret(
    serve: Serve,
    ca: Authority,
    inventory: Path,
    secrets: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = ca.issue("tasgen-fetch-client", server=False)
    folder = secrets / "gpu-topology" / "inventory-client"
    folder.mkdir(parents=True)
    (folder / "tls.crt").write_bytes(client.cert_pem)
    (folder / "tls.key").write_bytes(client.key_pem)
    memory = tmp_path / "memory"  # where the key pair is handed to OpenSSL, to look inside after
    memory.mkdir()
    monkeypatch.setattr(credentials, "_MEMORY", memory)
    endpoint = serve(answer(snapshot("inv-9001")), client_ca=ca)
    point_source(inventory, endpoint.url(), ca)
    _use_client_certificate(inventory)
    run = fetch(inventory, secrets)
    assert run.exit_code == 0, run.output
    (request,) = endpoint.seen.requests
    assert request["peer"]["subject"] == ((("commonName", "tasgen-fetch-client"),),)
    assert "Authorization" not in request["headers"]
    assert list(memory.iterdir()) == []
    assert client.key_pem.decode() not in run.output


def _use_client_certificate(inventory: Path) -> None:
    path = inventory / "sources" / "l40s-inventory.yaml"
    text = path.read_text().replace("bearerTokenSecretRef", "clientCertificateSecretRef")
    path.write_text(text.replace("name: inventory-token", "name: inventory-client"))


def test_a_server_requiring_a_client_certificate_refuses_a_bearer_token(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    endpoint = serve(answer(snapshot()), client_ca=ca)
    point_source(inventory, endpoint.url(), ca)
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert "l40s-inventory: failed: TLS handshake" in run.output or "cannot reach" in run.output
    assert endpoint.seen.requests == []


def test_wrong_ca_fails_before_the_credential_is_sent(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path, tmp_path: Path
) -> None:
    endpoint = serve(answer(snapshot()))
    point_source(inventory, endpoint.url(), Authority("another CA"))
    before = (inventory / SNAPSHOT_FILE).read_bytes()
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert "l40s-inventory: failed: TLS verification of 127.0.0.1 failed" in run.output
    assert endpoint.seen.connections == 1 and endpoint.seen.requests == []
    assert (inventory / SNAPSHOT_FILE).read_bytes() == before
    assert_no_credential_anywhere(run, tmp_path, secrets)


def test_ca_bundle_as_base64_of_pem(serve: Serve, ca: Authority, inventory: Path, secrets: Path) -> None:
    endpoint = serve(answer(snapshot("inv-9002")))
    point_source(inventory, endpoint.url(), None, caBundle=base64.b64encode(ca.pem).decode())
    run = fetch(inventory, secrets)
    assert run.exit_code == 0, run.output
    assert "updated (revision inv-9002)" in run.output


def test_without_ca_bundle_the_system_trust_store_refuses_a_private_ca(
    serve: Serve, inventory: Path, secrets: Path
) -> None:
    endpoint = serve(answer(snapshot()))
    point_source(inventory, endpoint.url(), None)
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert "TLS verification of 127.0.0.1 failed" in run.output
    assert endpoint.seen.requests == []


def test_plain_http_url_is_refused_without_connecting(
    serve: Serve, inventory: Path, secrets: Path, tmp_path: Path
) -> None:
    plain = serve(answer(snapshot()), tls=False)
    point_source(inventory, plain.url(scheme="http"), None)
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert "sources/l40s-inventory.yaml:" in run.output and "[schema]" in run.output
    assert "l40s-inventory: failed: its TopologySource is invalid" in run.output
    assert plain.seen.connections == 0
    assert_no_credential_anywhere(run, tmp_path, secrets)


def test_https_url_to_a_plain_http_server_fails_the_handshake(
    raw_listener: RawListener, inventory: Path, secrets: Path
) -> None:
    point_source(inventory, f"https://127.0.0.1:{raw_listener.port}/", None)
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert "l40s-inventory: failed: TLS handshake with 127.0.0.1" in run.output
    assert raw_listener.seen.connections == 1
    assert TOKEN.encode() not in raw_listener.seen.raw


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_an_error_and_the_credential_goes_nowhere_else(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path, status: int
) -> None:
    elsewhere = serve(answer(snapshot()))
    redirecting = serve(answer(b"", status, Location=elsewhere.url()))
    point_source(inventory, redirecting.url(), ca)
    before = (inventory / SNAPSHOT_FILE).read_bytes()
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert f"l40s-inventory: failed: the endpoint answered {status} (a redirect)" in run.output
    assert len(redirecting.seen.requests) == 1
    assert elsewhere.seen.connections == 0 and elsewhere.seen.requests == []
    assert (inventory / SNAPSHOT_FILE).read_bytes() == before


def test_an_error_status_is_reported_without_its_body(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    echo = serve(lambda h: (403, {}, f"denied: {h.headers['Authorization']}".encode()))
    point_source(inventory, echo.url(), ca)
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert "l40s-inventory: failed: the endpoint answered 403 Forbidden" in run.output
    assert TOKEN not in run.output


def test_an_oversize_answer_is_refused_by_its_declared_length(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    endpoint = serve(answer(snapshot()))
    point_source(inventory, endpoint.url(), ca)
    before = (inventory / SNAPSHOT_FILE).read_bytes()
    run = fetch(inventory, secrets, "--max-bytes", "100")
    assert run.exit_code == 1
    assert "over the limit of 100" in run.output
    assert (inventory / SNAPSHOT_FILE).read_bytes() == before


def test_an_oversize_answer_without_a_length_is_cut_off_while_reading(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    # 655 MB if it were all read, with no Content-Length to refuse it by
    endpoint = serve(lambda _h: (200, {}, (b"x" * 65536 for _ in range(10_000))))
    point_source(inventory, endpoint.url(), ca)
    run = fetch(inventory, secrets, "--max-bytes", "200000")
    assert run.exit_code == 1
    assert "l40s-inventory: failed: the answer is over the limit of 200000 bytes" in run.output


def test_a_slow_answer_meets_the_deadline(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    body = json.dumps(snapshot()).encode()
    endpoint = serve(lambda _h: (200, {"Content-Length": str(len(body))}, trickle(body, 0.05)))
    point_source(inventory, endpoint.url(), ca)
    before = (inventory / SNAPSHOT_FILE).read_bytes()
    run = fetch(inventory, secrets, "--timeout", "1")
    assert run.exit_code == 1
    assert "l40s-inventory: failed: the answer did not arrive within 1 s" in run.output
    assert (inventory / SNAPSHOT_FILE).read_bytes() == before


def test_an_endpoint_that_never_answers_times_out(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    def silent(_handler: Any) -> Any:
        time.sleep(2)  # longer than --timeout: the client gives up first
        return answer(snapshot())(_handler)

    endpoint = serve(silent)
    point_source(inventory, endpoint.url(), ca)
    run = fetch(inventory, secrets, "--timeout", "0.5")
    assert run.exit_code == 1
    assert f"l40s-inventory: failed: no answer from 127.0.0.1:{endpoint.port} within 0.5 s" in run.output


def test_invalid_json_leaves_the_file_untouched_with_a_position_in_the_answer(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    endpoint = serve(answer(b'{\n  "revision": "inv-9003",\n  "nodes": {,\n}\n'))
    point_source(inventory, endpoint.url(), ca)
    before = (inventory / SNAPSHOT_FILE).read_bytes()
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    shown = f"inventories/{SNAPSHOT_FILE} (answer of {endpoint.url()})"
    assert f"{shown}:3:13: error: invalid JSON" in run.output and "[json-syntax]" in run.output
    assert "l40s-inventory: failed: the answer is not a valid snapshot" in run.output
    assert (inventory / SNAPSHOT_FILE).read_bytes() == before


def test_a_snapshot_naming_an_unknown_node_leaves_the_file_untouched(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = json.dumps(snapshot("inv-9004", **{"ghost-1": {"topology.gpustack.ai/rack": "b-r11"}}), indent=2)
    endpoint = serve(answer(body.encode()))
    point_source(inventory, endpoint.url(), ca)
    before = (inventory / SNAPSHOT_FILE).read_bytes()
    monkeypatch.chdir(inventory.parent)
    run = fetch(Path("inventories"), secrets)
    assert run.exit_code == 1
    line = next(i for i, text in enumerate(body.splitlines(), 1) if "ghost-1" in text)
    shown = f"inventories/{SNAPSHOT_FILE} (answer of {endpoint.url()})"
    assert f"{shown}:{line}:5: error: snapshot of source 'l40s-inventory' names node 'ghost-1'" in run.output
    assert "[snapshot-unknown-node]" in run.output
    assert (inventory / SNAPSHOT_FILE).read_bytes() == before


def test_naming_an_unknown_source_is_a_usage_error(inventory: Path, secrets: Path) -> None:
    run = fetch(inventory, secrets, "no-such-source")
    assert run.exit_code == 2
    assert "no webhook source named no-such-source (webhook sources: l40s-inventory)" in run.output


def test_a_missing_secret_fails_that_source(
    serve: Serve, ca: Authority, inventory: Path, tmp_path: Path
) -> None:
    endpoint = serve(answer(snapshot()))
    point_source(inventory, endpoint.url(), ca)
    empty = tmp_path / "no-secrets"
    empty.mkdir()
    run = fetch(inventory, empty)
    assert run.exit_code == 1
    assert f"cannot read {empty}/gpu-topology/inventory-token/token" in run.output
    assert endpoint.seen.connections == 0


def _split_in_two_sources(inventory: Path, first: Endpoint, second: Endpoint, ca: Authority) -> None:
    """l40s-01/02 from the example's source, l40s-03/04 from a second webhook source."""
    hosts = {"l40s-inventory": ["l40s-01", "l40s-02"], "l40s-second": ["l40s-03", "l40s-04"]}
    committed = snapshot("inv-8812")
    for name, endpoint in (("l40s-inventory", first), ("l40s-second", second)):
        body = yaml.safe_load((inventory / "sources" / "l40s-inventory.yaml").read_text())
        body["metadata"]["name"] = name
        expression = {"key": "kubernetes.io/hostname", "operator": "In", "values": hosts[name]}
        body["spec"]["nodeSelector"] = {"matchExpressions": [expression]}
        body["spec"]["webhook"].update(url=endpoint.url(), caBundle=ca.pem.decode())
        body["spec"]["webhook"]["snapshotPath"] = f"snapshots/{name}.json"
        (inventory / "sources" / f"{name}.yaml").write_text(yaml.safe_dump(body))
        nodes = {n: committed["nodes"][n] for n in hosts[name]}
        (inventory / "snapshots" / f"{name}.json").write_text(json.dumps({"revision": "r0", "nodes": nodes}))


def test_one_failing_source_does_not_keep_the_others_from_being_written(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    good_nodes = {n: v for n, v in snapshot()["nodes"].items() if n in ("l40s-01", "l40s-02")}
    good = serve(answer({"revision": "inv-9100", "nodes": good_nodes}))
    bad = serve(answer(b"{not json"))
    _split_in_two_sources(inventory, good, bad, ca)
    before = (inventory / "snapshots" / "l40s-second.json").read_bytes()
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert "l40s-inventory: updated (revision inv-9100)" in run.output
    assert "l40s-second: failed: the answer is not a valid snapshot" in run.output
    assert json.loads((inventory / "snapshots" / "l40s-inventory.json").read_text())["revision"] == "inv-9100"
    assert (inventory / "snapshots" / "l40s-second.json").read_bytes() == before
    only = fetch(inventory, secrets, "l40s-inventory")
    assert only.exit_code == 0 and "l40s-second" not in only.output
    assert len(bad.seen.requests) == 1  # a named source is the only one polled


def test_answers_are_judged_against_the_current_selectors(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    """Each source selects two nodes; answers describing all four are refused, both."""
    everything = snapshot("inv-9200")
    first, second = serve(answer(everything)), serve(answer(everything))
    _split_in_two_sources(inventory, first, second, ca)
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert run.output.count("[snapshot-unselected-node]") == 4
    assert "l40s-inventory: failed: the answer is not a valid snapshot" in run.output
    assert "l40s-second: failed: the answer is not a valid snapshot" in run.output


def test_a_yaml_snapshot_path_is_written_as_canonical_yaml(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    endpoint = serve(answer(snapshot("inv-9300")))
    (inventory / SNAPSHOT_FILE).rename(inventory / "snapshots" / "l40s.yaml")
    point_source(inventory, endpoint.url(), ca, snapshotPath="snapshots/l40s.yaml")
    run = fetch(inventory, secrets)
    assert run.exit_code == 0, run.output
    text = (inventory / "snapshots" / "l40s.yaml").read_text()
    assert text.startswith("nodes:\n  l40s-01:\n    topology.gpustack.ai/rack: b-r11\n")
    assert text.endswith("revision: inv-9300\n")


def test_a_snapshot_path_that_is_a_symbolic_link_is_not_written_through(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text((inventory / SNAPSHOT_FILE).read_text())
    (inventory / SNAPSHOT_FILE).unlink()
    (inventory / SNAPSHOT_FILE).symlink_to(outside)
    endpoint = serve(answer(snapshot("inv-9400")))
    point_source(inventory, endpoint.url(), ca)
    before = outside.read_bytes()
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert "leads outside the inventory folder" in run.output
    assert outside.read_bytes() == before and endpoint.seen.connections == 0


@pytest.mark.parametrize(
    "args",
    [["--timeout", "0"], ["--max-bytes", "0"], ["--secrets-dir", "/does/not/exist"], ["--now", "soon"]],
)
def test_bad_options_are_usage_errors(inventory: Path, args: list[str]) -> None:
    run = tasgen("fetch", "-i", str(inventory), *args)
    assert run.exit_code == 2, run.output


def test_a_missing_inventory_folder_is_a_usage_error(tmp_path: Path) -> None:
    assert tasgen("fetch", "-i", str(tmp_path / "nowhere")).exit_code == 2


def test_an_answer_is_not_written_while_the_inventory_has_other_errors(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    endpoint = serve(answer(snapshot("inv-9500")))
    point_source(inventory, endpoint.url(), ca)
    (inventory / "broken.yaml").write_text("kind: [unclosed\n")
    before = (inventory / SNAPSHOT_FILE).read_bytes()
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert "l40s-inventory: failed: the inventory has errors with this answer (tasgen validate)" in run.output
    assert run.output.count("broken.yaml:") == 1 and "[yaml-syntax]" in run.output
    assert (inventory / SNAPSHOT_FILE).read_bytes() == before


def test_a_client_key_that_does_not_match_its_certificate(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    one, other = ca.issue("one", server=False), ca.issue("other", server=False)
    folder = secrets / "gpu-topology" / "inventory-client"
    folder.mkdir(parents=True)
    (folder / "tls.crt").write_bytes(one.cert_pem)
    (folder / "tls.key").write_bytes(other.key_pem)
    endpoint = serve(answer(snapshot()), client_ca=ca)
    point_source(inventory, endpoint.url(), ca)
    _use_client_certificate(inventory)
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert (
        "l40s-inventory: failed: tls.crt and tls.key are not a matching PEM certificate and key" in run.output
    )
    assert endpoint.seen.connections == 0
    assert other.key_pem.decode().splitlines()[1] not in run.output


@pytest.mark.parametrize(
    ("key", "message"), [("../../../token", "[schema]"), ("..", "cannot name a Secret's file")]
)
def test_a_secret_key_never_leads_outside_the_secrets_dir(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path, key: str, message: str
) -> None:
    (secrets.parent / "token").write_text("not-for-the-endpoint")
    endpoint = serve(answer(snapshot()))
    ref = {"namespace": "gpu-topology", "name": "inventory-token", "key": key}
    point_source(inventory, endpoint.url(), ca, bearerTokenSecretRef=ref)
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert message in run.output
    assert endpoint.seen.connections == 0


def test_the_loopback_guard_stops_any_other_address(inventory: Path, secrets: Path) -> None:
    """The example inventory's endpoint is never contacted by these tests (see conftest)."""
    with pytest.raises(AssertionError, match=r"a test tried to reach inventory\.example\.com"):
        fetch(inventory, secrets)


def test_an_answer_with_half_a_surrogate_pair_is_refused_at_its_escape(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    body = b'{\n  "revision": "inv-\\ud800",\n  "nodes": {}\n}\n'
    endpoint = serve(answer(body))
    point_source(inventory, endpoint.url(), ca)
    before = (inventory / SNAPSHOT_FILE).read_bytes()
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    # the loader refuses the escape while parsing (main's input hardening), at its position
    at = f"(answer of {endpoint.url()}):2:20: error: invalid JSON: this escape is half of a UTF-16 surrogate"
    assert at in run.output and "[json-syntax]" in run.output
    assert (inventory / SNAPSHOT_FILE).read_bytes() == before


def test_an_answer_cut_short_of_its_length_is_refused(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    """A YAML answer cut at a line still parses, with fewer nodes: the declared length tells."""
    full = yaml.safe_dump(snapshot("inv-cut"), sort_keys=True).encode()
    cut = b"".join(full.splitlines(keepends=True)[:-2])
    endpoint = serve(lambda _h: (200, {"Content-Length": str(len(full))}, cut))
    (inventory / SNAPSHOT_FILE).rename(inventory / "snapshots" / "l40s.yaml")
    point_source(inventory, endpoint.url(), ca, snapshotPath="snapshots/l40s.yaml")
    before = (inventory / "snapshots" / "l40s.yaml").read_bytes()
    assert yaml.safe_load(cut)["nodes"]  # what arrived is valid YAML on its own
    run = fetch(inventory, secrets)
    assert run.exit_code == 1
    assert f"failed: the answer was cut short: {len(cut)} of its {len(full)} bytes arrived" in run.output
    assert (inventory / "snapshots" / "l40s.yaml").read_bytes() == before


def test_an_etag_is_sent_back_only_to_the_url_it_came_from(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    """An ETag is one URL's: after spec.webhook.url changes, the new endpoint is asked
    unconditionally, though it happens to use the same opaque ETag."""

    def respond(revision: str) -> Callable[[Any], Any]:
        def answering(handler: Any) -> Any:
            if handler.headers.get("If-None-Match") == '"7"':
                return 304, {"ETag": '"7"'}, b""
            return answer(snapshot(revision), ETag='"7"')(handler)

        return answering

    old, new = serve(respond("inv-old")), serve(respond("inv-new"))
    point_source(inventory, old.url(), ca)
    assert fetch(inventory, secrets).exit_code == 0
    point_source(inventory, new.url(), ca)
    run = fetch(inventory, secrets)
    assert "If-None-Match" not in new.seen.requests[0]["headers"]
    assert "l40s-inventory: updated (revision inv-new)" in run.output
    assert json.loads((inventory / SNAPSHOT_FILE).read_text())["revision"] == "inv-new"


def test_a_source_whose_kind_is_written_with_an_escape_is_polled(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    """The files fetch parses are picked by the kind's spelling; an escaped kind is a kind."""
    endpoint = serve(answer(snapshot("inv-escaped")))
    point_source(inventory, endpoint.url(), ca)
    source = inventory / SOURCE_FILE
    text = json.dumps(yaml.safe_load(source.read_text())).replace(
        '"TopologySource"', '"Topology\\u0053ource"'
    )
    assert "TopologySource" not in text
    source.unlink()
    source.with_suffix(".json").write_text(text)
    run = fetch(inventory, secrets)
    assert "l40s-inventory: updated (revision inv-escaped)" in run.output, run.output
    assert len(endpoint.seen.requests) == 1


def test_a_304_to_an_unconditional_request_is_an_error(
    serve: Serve, ca: Authority, inventory: Path, secrets: Path
) -> None:
    """Not modified since what? Nothing was sent to compare with (no ETag is kept)."""
    endpoint = serve(lambda _h: (304, {}, b""))
    point_source(inventory, endpoint.url(), ca)
    run = fetch(inventory, secrets)
    assert "If-None-Match" not in endpoint.seen.requests[0]["headers"]
    assert run.exit_code == 1
    assert "failed: the endpoint answered 304 (not modified) to a request without If-None-Match" in run.output
