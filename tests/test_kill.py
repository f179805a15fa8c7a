"""Whole-tree atomicity under SIGKILL, and serialised renders.

A render of a 20k-node fleet (bench/fleet.py) that changes several files of rendered/ is
killed at 30 moments (a fixed list of seeded delays, most of them counted from the moment its
staging folder appears). After each kill, git must see rendered/ as all old or all new, rendered/ must hold
no file of neither render, and the next command must remove what the killed one left.
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.fleet import write_fleet
from tests.conftest import NOW, REPO, tasgen, tree

NODES = 20_000
KILLS = 30
SEED = 7


def cli(*args: str, cache: Path, quiet: bool = False) -> subprocess.Popen[bytes]:
    output = subprocess.DEVNULL if quiet else subprocess.PIPE
    return subprocess.Popen(
        [sys.executable, "-m", "tasgen.cli", *args, "--now", NOW],
        stdout=output,
        stderr=output,
        cwd=REPO,
        env={**os.environ, "TASGEN_CACHE_DIR": str(cache)},
    )


def finish(child: subprocess.Popen[bytes]) -> tuple[int, str]:
    out, err = child.communicate(timeout=120)
    return child.returncode, (out + err).decode()


def git(repo: Path, *args: str) -> str:
    run = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return run.stdout


def changed_paths(repo: Path) -> set[str]:
    """What git sees as changed, added or deleted under rendered/."""
    lines = git(repo, "status", "--porcelain", "--untracked-files=all", "--", "rendered").splitlines()
    return {line[3:].removeprefix("rendered/") for line in lines}


def new_inventory(old: Path, new: Path) -> None:
    """The same fleet with new snapshot revisions and a renamed queue: several files change
    (the two writing sources' NodeFeatures, the queues, the gate's plan), most do not."""
    shutil.copytree(old, new)
    for name, before, after in [
        ("sources.yaml", "bench-1", "bench-2"),
        ("l40s.json", "inv-1", "inv-2"),
        ("queues.yaml", "name: batch", "name: batch-2"),
    ]:
        (new / name).write_text((new / name).read_text().replace(before, after))


class Fleet:
    """A git repository whose committed rendered/ is the old render, plus the new inventory."""

    def __init__(self, root: Path, old_inventory: Path, new: Path) -> None:
        self.repo, self.new, self.cache = root / "repo", new, root / "memo"
        self.out = self.repo / "rendered"
        self.repo.mkdir(parents=True)
        code, output = finish(cli("render", "-i", str(old_inventory), "-o", str(self.out), cache=self.cache))
        assert code == 0, output
        git(self.repo, "init", "-q")
        git(self.repo, "add", "rendered")
        git(self.repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "old")
        self.old = tree(self.out)
        self.saved = root / "saved"
        shutil.copytree(self.out, self.saved)

    def reset(self) -> None:
        shutil.rmtree(self.out)
        shutil.copytree(self.saved, self.out)

    def render(self, quiet: bool = False) -> subprocess.Popen[bytes]:
        return cli("render", "-i", str(self.new), "-o", str(self.out), cache=self.cache, quiet=quiet)


@pytest.fixture(scope="module")
def fleets(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Fleet], dict[str, str], float]:
    """Two fleets (the kills run on both at once, one per core), the new tree and the time
    an uninterrupted render takes."""
    root = tmp_path_factory.mktemp("kill")
    write_fleet(root / "old", NODES)
    new_inventory(root / "old", root / "new")
    fleets = [Fleet(root / f"fleet-{i}", root / "old", root / "new") for i in range(2)]
    start = time.monotonic()
    code, output = finish(fleets[0].render())
    took = time.monotonic() - start
    assert code == 0, output
    new = tree(fleets[0].out)
    fleets[0].reset()
    return fleets, new, took


def kill_at(fleet: Fleet, moment: tuple[str, float], new: dict[str, str]) -> tuple[str, bool]:
    """Kill a render at ``moment`` (seconds after its start, or after its staging folder
    appeared); check the whole-tree state. Returns the state and whether the killed render
    left a staging folder behind."""
    fleet.reset()
    child = fleet.render(quiet=True)
    trigger, delay = moment
    while trigger == "stage" and child.poll() is None and not staging(fleet):
        time.sleep(0.002)
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    child.wait()
    state, left = tree(fleet.out), staging(fleet)
    assert state in (fleet.old, new), f"mixed or littered rendered/ after a kill at {moment}"
    differ = {p for p in {*fleet.old, *new} if fleet.old.get(p) != new.get(p)}
    assert changed_paths(fleet.repo) == (set() if state == fleet.old else differ)
    # The next command (a check, of the small example to keep it quick: rendered/ is stale
    # for it) takes the lock and removes what the killed render left beside rendered/.
    code, output = finish(
        cli("check", "-i", str(REPO / "inventories"), "-o", str(fleet.out), cache=fleet.cache)
    )
    assert code == 1 and "[stale-render]" in output and "Traceback" not in output
    assert not staging(fleet) and tree(fleet.out) == state
    return ("new" if state == new else "old"), left


def staging(fleet: Fleet) -> bool:
    return any(name.startswith(".rendered.") for name in os.listdir(fleet.repo))


def test_a_killed_render_leaves_one_whole_tree(fleets: tuple[list[Fleet], dict[str, str], float]) -> None:
    pair, new, took = fleets
    assert {fleet.old != new for fleet in pair} == {True}
    seeded = random.Random(SEED)
    # One kill in three at any moment of the run; the others while the new tree is staged,
    # swapped in and the old one deleted (the moments that matter).
    moments = [
        ("start", took * seeded.random()) if i % 3 == 0 else ("stage", seeded.uniform(0, 0.3))
        for i in range(KILLS)
    ]

    def kill_all(fleet: Fleet, mine: list[tuple[str, float]]) -> list[tuple[str, bool]]:
        return [kill_at(fleet, moment, new) for moment in mine]

    with ThreadPoolExecutor(2) as pool:  # each fleet is killed by one thread, in turn
        outcomes = [o for mine in pool.map(kill_all, pair, [moments[0::2], moments[1::2]]) for o in mine]
    assert len(outcomes) == KILLS
    assert {state for state, _ in outcomes} == {"old", "new"}  # kills before and after the swap
    assert any(left for _, left in outcomes)  # and kills that left a staging folder to clean


def test_two_renders_at_once_are_serialised(tmp_path: Path) -> None:
    """Both renders start while the lock is held, so both must wait; the later one wins
    whole, both exit 0, and nothing of the other's remains."""
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(REPO / "inventories", first)
    new_example(first, second)
    out = tmp_path / "out" / "rendered"
    out.parent.mkdir()
    expected = {}
    for inventory in (first, second):
        alone = tmp_path / f"{inventory.name}-alone"
        run = tasgen("render", "-i", str(inventory), "-o", str(alone), "--now", NOW)
        assert run.exit_code == 0, run.output
        expected[inventory.name] = tree(alone)
    holder = os.open(out.parent, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    children = [logged_render(i, out, log) for i, log in zip((first, second), logs, strict=True)]
    deadline = time.monotonic() + 60
    while not all("waiting for another tasgen" in log.read_text() for log in logs):
        assert time.monotonic() < deadline, [log.read_text() for log in logs]
        time.sleep(0.1)
    assert all(child.poll() is None for child in children)  # both wait for the lock
    os.close(holder)
    assert [child.wait(timeout=60) for child in children] == [0, 0], [log.read_text() for log in logs]
    assert tree(out) in (expected["first"], expected["second"])
    winner = first if tree(out) == expected["first"] else second
    assert tasgen("check", "-i", str(winner), "-o", str(out), "--now", NOW).exit_code == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["rendered"]


def logged_render(inventory: Path, out: Path, log: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "tasgen.cli", "render", "-i", str(inventory), "-o", str(out)]
    with log.open("wb") as sink:  # the child has its own copy of the descriptor
        return subprocess.Popen([*argv, "--now", NOW], stdout=sink, stderr=subprocess.STDOUT, cwd=REPO)


def new_example(old: Path, new: Path) -> None:
    shutil.copytree(old, new)
    plan = new / "queues" / "training.yaml"
    plan.write_text(plan.read_text().replace('"120"', '"96"'))
