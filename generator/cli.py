"""The tasgen command line: a thin click layer over the pipeline. Only this module exits."""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, NoReturn

import click
from click.core import ParameterSource

from .commands import fetch as fetching
from .commands.fetch.credentials import ClusterSecrets, SecretsDir
from .commands.fetch.report import fetch_report
from .model import PLACEHOLDER_REPO_URL
from .pipeline import Mode, Result, run
from .reporters import (
    CAPACITY,
    DOCTOR,
    FIT,
    PLAN,
    PROBLEMS,
    REPORTERS,
    RULES,
    Reporter,
    ReportKind,
    step_summary,
)
from .rules import BY_ID, REGISTRY, catalogue, reference
from .rules.import_nodes import NODE_LIST
from .util import color
from .util.folders import folder_problem
from .validate.labels import is_dns_subdomain
from .validate.schema import KINDS, SNAPSHOT, schema_of
from .validate.snapshots import rfc3339

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def _parse_now(value: str | None) -> datetime:
    """--now, else SOURCE_DATE_EPOCH (reproducible builds), else the clock."""
    if value is not None:
        moment = rfc3339(value)
        if moment is None:  # the same form as a snapshot's expiresAt
            message = f"{value!r} is not an RFC 3339 time with an offset, e.g. 2026-11-30T00:00:00Z"
            raise click.BadParameter(message, param_hint="'--now'")
        return moment
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        # ASCII digits only, as the reproducible-builds specification has it (int() takes more)
        seconds = int(epoch) if epoch.isascii() and epoch.isdigit() else None
        with contextlib.suppress(OverflowError, OSError, ValueError):
            if seconds is not None:
                return datetime.fromtimestamp(seconds, UTC)
        raise click.UsageError(f"SOURCE_DATE_EPOCH={epoch!r} is not a number of seconds")
    return datetime.now(UTC)


def _now_option(
    help_text: str = "The time used for expiry [default: $SOURCE_DATE_EPOCH, else the clock].",
) -> Callable[[Any], Any]:
    return click.option("--now", default=None, metavar="RFC3339", help=help_text)


def _kubeconfig_option(help_text: str) -> Callable[[Any], Any]:
    """A kubeconfig that must exist: the commands that read a cluster only when given one."""
    return click.option(
        "--kubeconfig",
        default=None,
        type=click.Path(dir_okay=False, exists=True, path_type=Path),
        help=help_text,
    )


def _folder_option(short: str, name: str, default: str, help_text: str) -> Callable[[Any], Any]:
    """A folder option with its short form and default, as -i and -o are spelt everywhere."""
    return click.option(
        short,
        f"--{name}",
        name,
        default=default,
        show_default=True,
        type=click.Path(file_okay=False, path_type=Path),
        help=help_text,
    )


def _inventory_option(help_text: str) -> Callable[[Any], Any]:
    """-i/--inventory, as every command that reads an inventory spells it."""
    return _folder_option("-i", "inventory", "inventories", help_text)


def _hint(option: str) -> str:
    """A command's option as click names its own in a usage error: '-i' / '--inventory'."""
    return " / ".join(f"'{name}'" for name in option.split(" / "))


def _format_option(kind: ReportKind) -> Callable[[Any], Any]:
    """--format, its choices, default and help as the report kind declares them."""
    return click.option(
        "--format",
        "format_",
        type=click.Choice(kind.names),
        default=kind.default,
        show_default=True,
        help=kind.help(),
    )


def _common(function: Any) -> Any:
    options = [
        _inventory_option("The inventory folder."),
        _format_option(PROBLEMS),
        _now_option(),
        click.option("--strict", is_flag=True, help="Warnings fail too (exit 1)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


#: -o/--output, the rendered folder, as render, check, plan and doctor spell it
_output_option = _folder_option("-o", "output", "rendered", "The rendered folder that Argo CD or Flux syncs.")


def _execute(
    mode: Mode,
    inventory: Path,
    output: Path,
    format_: str,
    now: str | None,
    strict: bool,
    use_memo: bool = True,
    kubeconfig: Path | None = None,
) -> None:
    if problem := folder_problem(inventory):
        raise click.BadParameter(problem, param_hint="'-i' / '--inventory'")
    result = run(
        inventory,
        output,
        _parse_now(now),
        mode,
        report=lambda r: _report(REPORTERS[format_], r, mode.value),
        use_memo=use_memo,
        strict=strict,
        kubeconfig=kubeconfig,
        on_wait=lambda: click.echo(f"tasgen: waiting for another tasgen to finish with {output}", err=True),
    )
    sys.stdout.write(_shown(result.report))
    if format_ == "github":
        step_summary(result, mode.value)
    sys.exit(_exit_code(result, strict))


def _report(reporter: Reporter, result: Result, command: str) -> str:
    """The whole report as text: the pipeline makes it before anything is written."""
    buffer = io.StringIO()
    reporter(result, command, buffer)
    return buffer.getvalue()


#: --color, as the group's option set it (auto until then)
_color = "auto"


def _shown(report: str) -> str:
    """A report as printed: problem levels coloured when --color (and the terminal) say so."""
    return _printable(color.colored(report) if color.wanted(_color, sys.stdout) else report)


def _printable(text: str) -> str:
    """A character that standard output cannot encode (a name in a terminal that is not
    UTF-8; an undecodable file name) is shown escaped rather than crash the print."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    return text.encode(encoding, "backslashreplace").decode(encoding)


def _exit_code(result: Result, strict: bool) -> int:
    if result.errors or (strict and result.warnings):
        return EXIT_PROBLEMS
    return EXIT_CLEAN


class _Commands(click.Group):
    """Loads the drain gate's command only when it is asked for: it imports the Kubernetes
    API client, a second of start-up that validate/render/check do not need."""

    LAZY: ClassVar[dict[str, str]] = {"gate": "tasgen.gate.command", "retire": "tasgen.gate.retire"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.LAZY])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY:
            module = importlib.import_module(self.LAZY[cmd_name])
            command: click.Command = getattr(module, cmd_name)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tasgen")
@click.option(
    "--color",
    "color_choice",
    type=click.Choice(color.CHOICES),
    default="auto",
    show_default=True,
    help="Colour the level of each problem: auto, on a terminal unless NO_COLOR is set.",
)
def cli(color_choice: str) -> None:
    """tasgen compiles GPU-fleet topology inventories into NFD NodeFeatures and the Kueue
    chain (Topology, ResourceFlavor, ClusterQueue) that Argo CD or Flux syncs.

    \b
    Example:
      tasgen validate -i inventories
      tasgen render -i inventories -o rendered
      tasgen check --format github    # in a pull request
      tasgen --color never validate   # no colour, even on a terminal
    """
    global _color  # noqa: PLW0603 - the one setting of the group, read where reports are printed
    _color = color_choice


@cli.command()
@_common
def validate(inventory: Path, format_: str, now: str | None, strict: bool) -> None:
    """Validate the inventory: JSON Schema, then every semantic rule. Writes nothing.

    \b
    Example:
      tasgen validate -i inventories --now 2026-11-30T00:00:00Z
    Exit: 0 clean, 1 problems (warnings too with --strict), 2 usage error.
    """
    _execute(Mode.VALIDATE, inventory, Path("rendered"), format_, now, strict)


@cli.command()
@_common
@_output_option
@click.option(
    "--no-cache", is_flag=True, help="Run every stage even if nothing changed since the last render."
)
@click.option(
    "--kubeconfig",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Read the live Workloads and ClusterQueues (read-only): drop the flavors that WaitForIdle "
    "queues keep at zero quota once no Workload is admitted on them.",
)
def render(
    inventory: Path,
    output: Path,
    format_: str,
    now: str | None,
    strict: bool,
    no_cache: bool,
    kubeconfig: Path | None,
) -> None:
    """Validate and write rendered/: all or nothing, only changed files, stale ones removed.

    \b
    Example:
      tasgen render -i inventories -o rendered && git add rendered
      tasgen render --kubeconfig ~/.kube/config   # retire idle WaitForIdle flavors
    Any error (including an immutable-field drift) means nothing is written. When neither
    the inventory, nor rendered/, nor tasgen changed since the last render (and no expiry
    passed), the recorded result is reused from the user's cache folder (never with
    --kubeconfig). A cluster that cannot be read is an error (cluster-unreadable).
    """
    _execute(
        Mode.RENDER, inventory, output, format_, now, strict, use_memo=not no_cache, kubeconfig=kubeconfig
    )


@cli.command()
@_common
@_output_option
def check(inventory: Path, output: Path, format_: str, now: str | None, strict: bool) -> None:
    """Validate and fail when rendered/ is not what render would write (for CI).

    \b
    Example:
      tasgen check --format github
    Exit 1 names each stale file and its first differing line, and prints a unified diff of
    them (at most 200 lines, then how many more).
    """
    _execute(Mode.CHECK, inventory, output, format_, now, strict)


@cli.command("plan")
@click.option("--base", "base", required=True, metavar="REF", help="The git revision to compare with.")
@_inventory_option("The inventory folder (the working tree's; the base is read from git).")
@_format_option(PLAN)
@_now_option()
@_kubeconfig_option("Read the live queues (read-only): what each drain would evict.")
@_output_option
def preview_change(
    base: str, inventory: Path, format_: str, now: str | None, kubeconfig: Path | None, output: Path
) -> None:
    """Show what merging the inventory change does to the cluster: queues and drains,
    hierarchies, relabelled nodes, fit preview and risk warnings. Writes nothing.

    \b
    Example:
      tasgen plan --base origin/main --format markdown > plan.md
    Exit: 0 whatever changes, 1 the working tree's inventory is invalid (problems printed as
    validate prints them, on standard error), 2 usage error (e.g. an unknown REF).
    """
    from .commands.plan import command as plan_command  # noqa: PLC0415 - not every render's start

    try:
        text, problems, code = plan_command.execute(
            base, inventory, format_, _parse_now(now), kubeconfig, output
        )
    except plan_command.UsageProblem as e:
        raise click.BadParameter(e.message, param_hint=_hint(e.option)) from e
    sys.stdout.write(_shown(text))
    sys.stderr.write(_printable(color.colored(problems) if color.wanted(_color, sys.stderr) else problems))
    sys.exit(code)


@cli.command()
@click.argument("paths", metavar="[PATH]...", nargs=-1)
@_inventory_option("The inventory folder.")
@_format_option(FIT)
@_now_option()
@_kubeconfig_option("Also say whether each PodSet fits now, from the live usage (read-only; never fails).")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
def fit(
    paths: tuple[str, ...],
    inventory: Path,
    format_: str,
    now: str | None,
    kubeconfig: Path | None,
    strict: bool,
) -> None:
    """Say whether each workload will ever be admitted: every PodSet of the manifests (files,
    folders, - for standard input; none: GeneratorConfig spec.workloads) against its queue's
    flavors, Topologies, nodes and quota, as Kueue judges them. Writes nothing.

    \b
    Example:
      tasgen fit -i inventories jobs/ --format github
    Exit: 0 every PodSet fits on an empty cluster, 1 one never fits (or a manifest is bad, or
    the inventory is invalid), 2 usage error.
    """
    from .commands.fit import command as fit_command  # noqa: PLC0415 - not every render's start

    try:
        text, code = fit_command.execute(paths, inventory, format_, _parse_now(now), kubeconfig, strict)
    except fit_command.UsageProblem as e:
        raise click.BadParameter(e.message, param_hint=_hint(e.option)) from e
    sys.stdout.write(_shown(text))
    sys.exit(code)


@cli.command()
@_inventory_option("The inventory folder (its NodeInventory names the nodes).")
@_output_option
@_kubeconfig_option("The cluster to check [default: in-cluster, else $KUBECONFIG, else ~/.kube/config].")
@_format_option(DOCTOR)
def doctor(inventory: Path, output: Path, kubeconfig: Path | None, format_: str) -> None:
    """Check a live cluster against what the render needs: Kueue, NFD, the gate's admission
    policy and RBAC, the sync engine, the inventory's nodes. Read-only: GET and LIST only.

    \b
    Example:
      tasgen doctor --kubeconfig ~/.kube/config
    Exit: 0 no error (warnings allowed), 1 an error found, the inventory invalid or the
    cluster unreadable, 2 usage error (an unusable kubeconfig too).
    """
    from .commands.doctor import command as doctor_command  # noqa: PLC0415 - not every render's start

    try:
        text, code = doctor_command.execute(inventory, output, kubeconfig, format_)
    except doctor_command.UsageProblem as e:
        raise click.BadParameter(e.message, param_hint=_hint(e.option)) from e
    except doctor_command.Unreachable as e:
        click.echo(f"tasgen doctor: {e}", err=True)
        sys.exit(EXIT_PROBLEMS)
    sys.stdout.write(_printable(text))
    sys.exit(code)


@cli.command()
@_inventory_option("The inventory folder.")
@click.option(
    "--size",
    "sizes",
    default=None,
    metavar="N[xP],...",
    help="Pods of N GPUs (xP: P of them in one domain) [default: the GeneratorConfig's workloads' "
    "sizes, else 1, 8 and a whole node].",
)
@_format_option(CAPACITY)
@_now_option()
@_kubeconfig_option("Also count what is free now, from the live usage (read-only).")
def capacity(
    inventory: Path, sizes: str | None, format_: str, now: str | None, kubeconfig: Path | None
) -> None:
    """Say what slots each ClusterQueue's flavors offer: per Topology level, its domains, and
    how many pods of each size the largest domain holds and how many domains hold one, within
    the queue's quota (cohort borrowing included). Writes nothing.

    \b
    Example:
      tasgen capacity --size 8,8x4 --kubeconfig ~/.kube/config
    Exit: 0 reported, 1 the inventory is invalid, 2 usage error.
    """
    from .commands.capacity import command as capacity_command  # noqa: PLC0415 - not every render's start

    try:
        text, code = capacity_command.execute(inventory, sizes, kubeconfig, format_, _parse_now(now))
    except capacity_command.UsageProblem as e:
        raise click.BadParameter(e.message, param_hint=_hint(e.option)) from e
    sys.stdout.write(_printable(text))
    sys.exit(code)


@cli.command()
@click.argument("directory", required=False, default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--repo-url",
    default=PLACEHOLDER_REPO_URL,
    show_default=True,
    help="The git URL Argo CD syncs rendered/ from.",
)
@click.option("--branch", default="main", show_default=True, help="The branch Argo CD syncs.")
def init(directory: Path, repo_url: str, branch: str) -> None:
    """Scaffold a GitOps repository that uses tasgen: inventories/config.yaml (a commented
    GeneratorConfig), a pull-request workflow (validate, check, plan as one PR comment), a
    pre-commit configuration, and the Argo CD and Flux objects that sync rendered/.

    \b
    Example:
      git init fleet && tasgen init fleet --repo-url https://github.com/acme/fleet.git
    Exit 1, writing nothing, when any of these files exists.
    """
    from .commands import init as init_command  # noqa: PLC0415 - not every render's start

    for value, option in ((repo_url, "--repo-url"), (branch, "--branch")):
        if not value.strip() or not value.isprintable():
            raise click.BadParameter("must be a non-empty line of printable text", param_hint=f"'{option}'")
    options = init_command.Options(repo_url, branch, init_command.installed_version())
    try:
        written = init_command.scaffold(directory, options)
    except init_command.Exists as e:
        click.echo(
            f"tasgen init: {', '.join(e.paths)} exist(s) in {directory}; nothing was written", err=True
        )
        sys.exit(EXIT_PROBLEMS)
    except (init_command.Unwritable, init_command.Unusable) as e:
        click.echo(f"tasgen init: {e}; nothing was written", err=True)
        sys.exit(EXIT_PROBLEMS)
    for path in written:
        click.echo(f"wrote {(directory / path).as_posix()}")


def _inventory_name(value: str | None) -> str | None:
    """A name the NodeInventory schema takes (a DNS-1123 subdomain): what validate would refuse
    is never written."""
    if value is not None and not is_dns_subdomain(value):
        raise click.BadParameter(f"{value!r} is not a DNS-1123 subdomain (lower case, digits, '-' and '.')")
    return value


def _yaml_file(value: Path | None) -> Path | None:
    """tasgen writes YAML, and reads a .json file as JSON (another suffix: not at all)."""
    if value is not None and value.suffix not in (".yaml", ".yml"):
        raise click.BadParameter(f"{value} must be a file name ending in .yaml or .yml (tasgen writes YAML)")
    return value


@cli.command("import-nodes")
@click.argument(
    "sources", metavar="FILE|-...", nargs=-1, required=True, type=click.File("r", encoding="utf-8")
)
@click.option(
    "--name",
    default=None,
    callback=lambda _ctx, _param, value: _inventory_name(value),
    help="metadata.name of the NodeInventory [default: the refreshed file's, else nodes].",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    callback=lambda _ctx, _param, value: _yaml_file(value),
    help="Write here (atomically) instead of to standard output; a .yaml or .yml file.",
)
@_inventory_option("Labels its writing sources and its GeneratorConfig's volatileLabelKeys name are dropped.")
def import_nodes(sources: tuple[Any, ...], name: str | None, output: Path | None, inventory: Path) -> None:
    """Turn `kubectl get nodes -o json|yaml` into a sorted NodeInventory.

    Only names, labels, allocatable, taints and a cordon are kept, sorted, so that a refresh
    gives a small, reviewable diff. Labels tasgen itself puts on nodes (the profile key, the levels of the
    inventory's writing sources) and volatile ones (GeneratorConfig volatileLabelKeys,
    default nvidia.com/gfd.timestamp) are dropped: importing right after a sync changes
    nothing. Several files (one per cluster, say) make one inventory. Refreshing a file
    keeps the comment block at its top.

    \b
    Example:
      kubectl get nodes -o json | tasgen import-nodes - -o inventories/nodes.yaml
    """
    from .commands.import_nodes import label_filter, nodes  # noqa: PLC0415 - not every render's start

    given = click.get_current_context().get_parameter_source("inventory") is ParameterSource.COMMANDLINE
    if given and (problem := folder_problem(inventory)):  # without one, the default filter
        raise click.BadParameter(problem, param_hint="'-i' / '--inventory'")
    inputs: list[tuple[str, str]] = []
    for source in sources:
        shown = "<stdin>" if source.name in ("<stdin>", "-") else source.name
        try:
            inputs.append((shown, source.read()))
        except UnicodeDecodeError:
            click.echo(f"{shown}:1:1: error: not UTF-8 text [{NODE_LIST.id}]", err=True)
            sys.exit(EXIT_PROBLEMS)
    header = nodes.header_of(output) if output else nodes.HEADER
    name = name or (nodes.name_of(output) if output else None) or nodes.DEFAULT_NAME
    try:
        imported = nodes.convert(inputs, name, label_filter.of_inventory(inventory), header)
    except nodes.ImportProblems as e:
        for p in e.problems:
            click.echo(f"{p.file}:{p.line}:{p.col}: error: {p.message} [{NODE_LIST.id}]", err=True)
        click.echo(f"tasgen import-nodes: {len(e.problems)} error(s); nothing was written", err=True)
        sys.exit(EXIT_PROBLEMS)
    if imported.nodes == 0:
        click.echo("warning: the input lists no nodes (an empty cluster, or the wrong context?)", err=True)
    if output is None:
        sys.stdout.write(imported.text)
    else:
        try:
            nodes.write_atomically(output, imported.text)
        except nodes.OutputProblem as e:
            click.echo(f"tasgen import-nodes: {e}", err=True)
            sys.exit(EXIT_PROBLEMS)
        click.echo(f"wrote {output}: {imported.nodes} node(s)")


@cli.command()
@_inventory_option("The inventory folder.")
@click.argument("names", metavar="[SOURCE]...", nargs=-1)
@click.option(
    "--secrets-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Read Secrets from DIR/<namespace>/<name>/<key> instead of the cluster.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Read Secrets from this cluster [default: $KUBECONFIG, else ~/.kube/config].",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=fetching.DEFAULT_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="For connecting, and for the whole answer to arrive.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=fetching.DEFAULT_MAX_BYTES,
    show_default=True,
    metavar="N",
    help="The largest answer accepted (enforced while reading).",
)
@_now_option("The time used for expiry when validating [default: $SOURCE_DATE_EPOCH, else the clock].")
def fetch(
    inventory: Path,
    names: tuple[str, ...],
    secrets_dir: Path | None,
    kubeconfig: Path | None,
    timeout: float,
    max_bytes: int,
    now: str | None,
) -> None:
    """Poll webhook sources (all, or those named) and commit each valid answer to snapshotPath.

    HTTPS only, TLS verified (caBundle, else the system trust store), redirects refused.
    Each answer is validated like a committed snapshot against the current inventory; an
    invalid one leaves the committed file untouched. Valid answers are written in a
    canonical form (sorted keys), so an unchanged topology gives no diff; the ETag is kept
    in <snapshotPath>.etag and a 304 means unchanged.

    \b
    Example:
      tasgen fetch --secrets-dir /var/run/secrets/tasgen && tasgen render
    Exit: 0 every source current or updated, 1 any source failed (the others are still
    written), 2 usage error.
    """
    if problem := folder_problem(inventory):
        raise click.BadParameter(problem, param_hint="'-i' / '--inventory'")
    secrets = SecretsDir(secrets_dir) if secrets_dir else ClusterSecrets(kubeconfig)
    options = fetching.Options(secrets, timeout, max_bytes)
    try:
        outcomes = fetching.fetch(inventory, names, options, _parse_now(now))
    except fetching.UnknownSource as e:
        raise click.UsageError(str(e)) from None
    sys.stdout.write(_shown(fetch_report(outcomes)))
    failed = any(o.status is fetching.Status.FAILED for o in outcomes)
    sys.exit(EXIT_PROBLEMS if failed else EXIT_CLEAN)


@cli.command()
@click.argument("kind", type=click.Choice([*sorted(KINDS), SNAPSHOT], case_sensitive=False))
def schema(kind: str) -> None:
    """Print the JSON Schema of an inventory kind (for editors and yaml-language-server).

    \b
    Example:
      tasgen schema TopologySource > .schemas/TopologySource.json
    """
    click.echo(json.dumps(schema_of(kind), indent=2))


@cli.command()
@click.argument("rule_id", metavar="[RULE-ID]", required=False)
@_format_option(RULES)
def rules(rule_id: str | None, format_: str) -> None:
    """Print the rule catalogue (every rule ID, its level and stage) as a Markdown table, or
    one rule's reference: what it requires, why it matters, a failing example, the fix.

    \b
    Examples:
      tasgen rules                 # the catalogue
      tasgen rules flavor-limit    # one entry (docs/reference/rules/flavor-limit.md)
    """
    if rule_id is None:
        if format_ == "json":
            click.echo(json.dumps([reference.entry_data(r) for r in REGISTRY], indent=2))
        else:
            click.echo(catalogue(), nl=False)
        return
    rule = BY_ID.get(rule_id)
    if rule is None:
        near = reference.closest(rule_id, list(BY_ID))
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise click.BadParameter(
            f"no rule {rule_id!r}{hint} ('tasgen rules' lists them all)", param_hint="'RULE-ID'"
        )
    if format_ == "json":
        click.echo(json.dumps(reference.entry_data(rule), indent=2))
    else:
        sys.stdout.write(_printable(reference.entry_markdown(rule)))


def main() -> None:
    # No cycle collection in a tasgen process: a render's objects are freed with it
    # (_exit_now), and a collection once the pipeline re-enables it would walk them all
    # (docs/explanation/render-speed.md). The gate's and retire's loops poll a few hundred times at most.
    gc.disable()
    _refuse_closed_streams()
    try:
        cli.main(standalone_mode=True)
    except SystemExit as e:
        _exit_now(e.code)
    except KeyboardInterrupt:
        click.echo("tasgen: interrupted; rendered/ is one whole render, old or new", err=True)
        sys.exit(130)
    except OSError as e:  # the report could not be written (a full disk behind > file): no bug
        with contextlib.suppress(OSError):
            click.echo(f"tasgen: {e.filename or 'standard output'}: {e.strerror or e}", err=True)
        _exit_now(EXIT_PROBLEMS)
    except Exception as e:
        if os.environ.get("TASGEN_DEBUG"):
            raise
        click.echo(
            f"tasgen: internal error: {type(e).__name__}: {e}. This is a bug; please report "
            "it (set TASGEN_DEBUG=1 for the traceback).",
            err=True,
        )
        sys.exit(EXIT_PROBLEMS)


def _refuse_closed_streams() -> None:
    """Python makes a stream None when its descriptor was closed at start (``tasgen render
    >&-``): the report could not be printed, after rendered/ was written. Refused before
    anything is done, on whichever stream is open."""
    if sys.stdin is None:  # only import-nodes - reads it: then it reads nothing, and says so
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's own stream
        sys.stdin.buffer.raw.name = "<stdin>"  # type: ignore[attr-defined]
    closed = [name for name in ("output", "error") if getattr(sys, f"std{name[:3]}") is None]
    if not closed:
        return
    stream = sys.stderr or sys.stdout
    if stream is not None:
        with contextlib.suppress(OSError):
            stream.write(f"tasgen: standard {' and '.join(closed)} is closed; nothing was done\n")
            stream.flush()
    os._exit(EXIT_USAGE)


def _exit_now(code: int | str | None) -> NoReturn:
    """Exit without freeing the run's objects one by one: freeing a render's millions of
    small objects (held by the exception's frames until here) is a noticeable share of a large
    render, and the process is ending anyway. Every file and folder was closed by a ``with``
    or ``finally``; output is flushed first. (mypy exits the same way.)"""
    if isinstance(code, str):
        click.echo(code, err=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader that went away (| head) reads no more
            stream.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


if __name__ == "__main__":
    main()
