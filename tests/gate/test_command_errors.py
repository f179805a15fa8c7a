"""tasgen gate on an unusable plan and an unreachable API server: the documented exit codes,
one JSON line saying why, never a traceback."""

from __future__ import annotations

import importlib.util
import json
import resource
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO


def gate(*args: str) -> tuple[int, list[dict[str, Any]], str]:
    return command("tasgen.cli", "gate", *args)


def command(module: str, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    """A gate command run as its Job runs it: exit code, JSON log lines, stderr."""
    run = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=120,
    )
    return run.returncode, [json.loads(line) for line in run.stdout.splitlines()], run.stderr


def test_a_plan_whose_metadata_is_not_a_mapping_exits_2(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: oops\n")
    code, lines, stderr = gate("--plan", str(plan))
    assert code == 2 and "Traceback" not in stderr
    assert lines[-1]["event"] == "error" and "metadata is not a mapping" in lines[-1]["message"]


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def kubeconfig_at(port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }


def test_dry_run_against_an_unreachable_api_server_retries_then_says_so(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(kubeconfig_at(closed_port())))
    plan = str(REPO / "rendered" / "queues")
    code, lines, stderr = gate("--plan", plan, "--dry-run", "--timeout", "3", "--kubeconfig", str(kubeconfig))
    assert code == 1 and "Traceback" not in stderr, stderr
    events = [line["event"] for line in lines]
    assert events[0] == "start" and "retry" in events and events[-1] == "error"
    assert "stayed unreachable until the timeout" in lines[-1]["message"]


@pytest.mark.parametrize("text", ["just a string\n", "clusters: 5\n", "- a\n"])
def test_a_kubeconfig_of_another_shape_is_an_error_not_a_crash(tmp_path: Path, text: str) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(text)
    plan = str(REPO / "rendered" / "queues")
    code, lines, stderr = gate("--plan", plan, "--dry-run", "--timeout", "3", "--kubeconfig", str(kubeconfig))
    assert code == 2 and "Traceback" not in stderr, stderr  # a configuration problem, as a bad plan
    assert lines[-1]["event"] == "error" and "not a kubeconfig" in lines[-1]["message"]


def test_a_socks_proxy_without_pysocks_is_a_configuration_error(tmp_path: Path) -> None:
    """urllib3 imports PySocks only for a socks5:// proxy-url; without it the client's import
    error was an internal error in gate, retire, plan and fetch."""
    assert importlib.util.find_spec("socks") is None, "PySocks is installed: this case needs it absent"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": f"https://127.0.0.1:{closed_port()}",
                            "proxy-url": f"socks5://127.0.0.1:{closed_port()}",
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    needs = "cannot use the kubeconfig: its proxy-url needs the module 'socks', which is not installed"
    plan = str(REPO / "rendered" / "queues")
    code, lines, stderr = gate("--plan", plan, "--dry-run", "--timeout", "3", "--kubeconfig", str(kubeconfig))
    assert code == 2 and "Traceback" not in stderr, stderr
    assert lines[-1]["event"] == "error" and needs in lines[-1]["message"]
    configmap = yaml.safe_load((REPO / "rendered" / "retire" / "configmap-keep.yaml").read_text())
    (tmp_path / "keep.yaml").write_text(configmap["data"]["keep.yaml"])
    retire = ("retire", "--keep", str(tmp_path / "keep.yaml"), "--kubeconfig", str(kubeconfig))
    code, lines, stderr = command("tasgen.cli", *retire)
    assert code == 2 and "Traceback" not in stderr, stderr
    assert needs in lines[-1]["message"]
    planned = subprocess.run(
        [sys.executable, "-m", "tasgen.cli", "plan", "--base", "HEAD", "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=120,
    )
    assert planned.returncode == 2 and needs in planned.stderr and "internal error" not in planned.stderr
    shutil.copytree(REPO / "inventories", tmp_path / "inventories")  # its webhook source's secret
    fetched = subprocess.run(
        [sys.executable, "-m", "tasgen.cli", "fetch", "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
        timeout=120,
    )
    assert fetched.returncode == 1 and "internal error" not in fetched.stdout + fetched.stderr
    assert f"l40s-inventory: failed: {needs}" in fetched.stdout + fetched.stderr


CQ = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec: "


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        # past the YAML parser's recursion: refused by the reader the inventory uses, at the place
        ("[" * 5000 + "]" * 5000, ":4:262: invalid YAML: recursion limit exceeded [yaml-syntax]"),
        ("{a: " * 2000 + "1" + "}" * 2000, ":4:1027: invalid YAML: recursion limit exceeded [yaml-syntax]"),
        ("{a: " * 200 + "1" + "}" * 200, ": nested more than 64 levels deep"),  # parsed, then deep
        (  # an alias inside its own anchor: a cycle
            "&s {a: *s}",
            ":4:14: the alias *s is inside the node anchored &s: a structure that contains itself "
            "has no JSON form; alias a complete node, or write it out [yaml-alias-cycle]",
        ),
    ],
    ids=["deep-list", "deep-mapping", "deep-after-parsing", "cycle"],
)
def test_a_plan_nested_too_deeply_is_unusable_not_a_crash(tmp_path: Path, spec: str, says: str) -> None:
    """A crash (exit 3) is what the Job retries; a plan that cannot be used is exit 2."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(CQ + spec + "\n")
    code, lines, stderr = gate("--plan", str(plan), "--dry-run", "--timeout", "1")
    assert code == 2 and "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert lines[-1]["event"] == "error" and lines[-1]["message"] == f"{plan}{says}", lines


#: Nine levels of nine aliases: PyYAML, which the gate once read its plan with, expands it to
#: 9**9 nodes (minutes and gigabytes); the guarded reader refuses it before expanding anything.
BOMB = (
    CQ
    + "\n"
    + "".join(
        f"  {name}: &{name} [{','.join(['x'] * 9 if name == 'a' else [f'*{previous}'] * 9)}]\n"
        for previous, name in zip("-abcdefgh", "abcdefghi", strict=True)
    )
)


def bounded() -> None:
    """A child's memory and CPU, bounded: a bomb that got expanded would die here (exit by
    signal, or MemoryError), not pass."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (60, 60))


def test_an_alias_bomb_in_the_plan_is_a_positioned_error_before_any_expansion(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(BOMB)
    # A usable kubeconfig (nothing listens there): an unusable one would end the run before
    # anything walks the plan, which is where the expansion cost the old loader its minutes.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(kubeconfig_at(closed_port())))
    options = ["--plan", str(plan), "--dry-run", "--timeout", "1", "--kubeconfig", str(kubeconfig)]
    run = subprocess.run(
        [sys.executable, "-m", "tasgen.cli", "gate", *options],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=120,
        preexec_fn=bounded,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr, (run.returncode, run.stderr)
    (line,) = [json.loads(line) for line in run.stdout.splitlines()]
    # The spec's sixth line's second alias is the one that would replay more than 200,000 nodes:
    # a's list is 10 nodes, b's 1 + 9 * 10 = 91, c's 820, d's 7,381, e's 66,430; b to e's
    # aliases replay 90 + 819 + 7,380 + 66,429 = 74,718, and f's first two aliases of e 132,860
    # more.
    assert line["event"] == "error" and line["message"].startswith(
        f"{plan}:10:13: YAML aliases would expand"
    ), line
    assert line["message"].endswith("an alias bomb? Write it out [yaml-alias-limit]"), line


def test_a_plan_folder_with_a_symbolic_link_loop_is_unusable(tmp_path: Path) -> None:
    """A mounted ConfigMap whose key is a link that resolves to nothing (a loop here) was
    skipped as not a file: an empty plan, exit 0 with every queue left unguarded."""
    folder = tmp_path / "plan"
    folder.mkdir()
    (folder / "..data").symlink_to("..data")  # the kubelet's link, looping
    (folder / "clusterqueues.yaml").symlink_to("..data/clusterqueues.yaml")
    code, lines, stderr = gate("--plan", str(folder), "--dry-run", "--timeout", "1")
    assert code == 2 and "Traceback" not in stderr, stderr
    message = lines[-1]["message"]
    assert lines[-1]["event"] == "error" and str(folder / "clusterqueues.yaml") in message, lines
    assert "symbolic link loop" in message, message

    looping = tmp_path / "loop"
    looping.symlink_to("loop")  # --plan itself a loop: not "no such file or directory"
    code, lines, stderr = gate("--plan", str(looping), "--dry-run", "--timeout", "1")
    assert code == 2 and "symbolic link loop" in lines[-1]["message"], lines
