"""Rules of the load stage: files and folders, bytes, YAML and JSON syntax."""

from .base import Rule, Stage

_S = Stage.LOAD

FILE_UNREADABLE = Rule(
    "file-unreadable",
    _S,
    "Every inventory file and folder can be read: a regular file of UTF-8 text, a folder that can be listed.",
    why=(
        "tasgen renders the whole inventory or nothing. A file it skipped would take its queues, "
        "flavors or nodes out of the render, and the GitOps engine would then prune them from the "
        "cluster. A file that is not UTF-8 (Latin-1, UTF-16), a FIFO or device, a folder that "
        "cannot be listed and a broken or looping link are therefore errors, never skipped."
    ),
    fix=(
        "Save the file as UTF-8, make it and its folders readable, replace a special file with a "
        "regular one, and repair or remove a broken or looping link."
    ),
)
SYMLINK_OUTSIDE = Rule(
    "symlink-outside",
    _S,
    "A symbolic link below the inventory folder resolves inside it (nothing outside is ever read).",
    why=(
        "tasgen reads nothing outside the inventory folder, so reviewing that folder is reviewing "
        "everything a render depends on. A link out of it would let a file that no pull request "
        "shows change the cluster, and the render would differ from one machine to another."
    ),
    fix=("Copy the file into the inventory folder, or point the link at a file or folder inside it."),
)
CLUSTER_UNREADABLE = Rule(
    "cluster-unreadable",
    _S,
    "With --kubeconfig, the cluster's Workloads and ClusterQueues can be read.",
    why=(
        "`tasgen render --kubeconfig` drops a flavor that a WaitForIdle queue keeps at zero quota "
        "only once the live cluster shows that no Workload is admitted on it. A cluster that "
        "cannot be read (no such file, an unreachable server, a refused credential, no Kueue) "
        "shows nothing, and guessing would either evict work or keep the flavor for no reason, "
        "so the render fails and writes nothing."
    ),
    fix=(
        "Fix what the message names: the kubeconfig's path, server and credentials; the user "
        "needs `list` on `workloads` (all namespaces) and `clusterqueues` of kueue.x-k8s.io. Or "
        "render without --kubeconfig (offline, deterministic: only retainFor ends a retention)."
    ),
)
YAML_SYNTAX = Rule(
    "yaml-syntax",
    _S,
    "A file is valid YAML, of characters YAML allows (no NUL or control characters).",
    why=(
        "What cannot be parsed cannot be rendered, and skipping it would drop its objects. "
        "Characters YAML forbids are refused at their position too: the fast parser stops reading "
        "at a NUL and silently drops the rest of the file, and an escape character in a value "
        "would reach terminals and CI logs."
    ),
    fix=(
        "Fix the YAML at the reported line and column (an unclosed bracket or quote, a bad "
        "indentation); delete control characters, or write them as escapes in a double-quoted "
        "string."
    ),
)
JSON_SYNTAX = Rule(
    "json-syntax",
    _S,
    "A .json file is valid JSON of Unicode text (no unpaired surrogate escapes).",
    why=(
        "A .json file is parsed as JSON, not YAML, and must be valid JSON. An escape of half a "
        'UTF-16 surrogate pair ("\\ud800") is no character: it can be neither printed nor applied '
        "to a cluster (kubectl refuses it in a manifest)."
    ),
    fix=(
        "Fix the JSON at the reported position; write the character itself (or the escapes of a "
        "complete surrogate pair) instead of half a pair."
    ),
)
DUPLICATE_KEY = Rule(
    "duplicate-key",
    _S,
    "A mapping has each key once.",
    why=(
        "Which value of a repeated key counts depends on the parser (many keep the last one "
        "without a word), so the file would not mean what its reviewer reads. The Kubernetes API "
        "server's strict field validation refuses duplicate fields for the same reason."
    ),
    fix=("Keep one of the two keys: merge the values, or delete the one that is not meant."),
)
YAML_ALIAS_LIMIT = Rule(
    "yaml-alias-limit",
    _S,
    "YAML aliases would not expand beyond a bounded size or depth (checked before expanding).",
    why=(
        'A few lines of anchors and aliases can expand to gigabytes (an "alias bomb"). The check '
        "adds up what each alias would expand to before anything is expanded: beyond 4 MiB plus "
        "four times the text's own size, 200,000 nodes or 32 levels of nesting it is refused, so "
        "a malicious or mistaken file cannot exhaust the memory of CI."
    ),
    fix=(
        "Write the repeated content out, or alias smaller pieces; inventories need no more than a "
        "few aliases, if any."
    ),
)
YAML_ALIAS_CYCLE = Rule(
    "yaml-alias-cycle",
    _S,
    "A YAML alias does not refer to a node it is inside of (no recursive structures).",
    why=(
        "An alias inside its own anchored node (`&a {child: *a}`) makes a structure that contains "
        "itself: it has no JSON form and no Kubernetes object can hold it. Parsers disagree on "
        "it: PyYAML builds the cycle (and whatever walks it never ends), the fast parser tasgen "
        "uses reads the alias as null without a word, so the file would not mean what its "
        "reviewer reads."
    ),
    fix="Alias a node only after it is complete, or write the nested value out.",
)
YAML_DEPTH = Rule(
    "yaml-depth",
    _S,
    "YAML nests at most 500 levels, aliases expanded (checked before parsing: deeper crashes parsers).",
    why=(
        'The YAML parser recurses once per nesting level: about 11,000 levels (22 KB of "- - - '
        '...") overflowed its stack and killed tasgen with a segmentation fault and no message. '
        "No inventory nests more than a dozen levels, so anything beyond 500 is refused before "
        "parsing."
    ),
    fix=("Flatten the structure; a file this deep is generated by mistake (or on purpose)."),
)
YAML_TAG = Rule(
    "yaml-tag",
    _S,
    "No YAML tags beyond the core schema's (!!str, !!int, ...): no !foo, !!binary, !!set.",
    why=(
        "Inventories are Kubernetes-style objects: mappings, lists, strings, numbers and "
        "booleans. Values of other tags (!!binary bytes, !!set sets, !!timestamp dates, custom "
        "!tags) have no JSON form and different parsers read them differently, or drop the tag "
        "silently."
    ),
    fix=("Remove the tag and write the value as a plain string, list or mapping."),
)
YAML_TAG_MISMATCH = Rule(
    "yaml-tag-mismatch",
    _S,
    "A core YAML tag agrees with its node: !!map on a mapping, !!seq on a list, !!int on an integer, ...",
    why=(
        "A tag that contradicts its node (!!str on a mapping, !!seq on a mapping, !!int on "
        "abc) says one thing while the text says another. The fast parser drops a collection's "
        "tag without a word and other parsers refuse the node or convert it, so the file would "
        "mean different things to tasgen, to its reviewer and to other tools."
    ),
    fix=(
        "Remove the tag (an untagged node is read as written), or write a value of the tagged "
        'type (quote a string instead of tagging it: "16").'
    ),
)
MAPPING_KEY = Rule(
    "mapping-key",
    _S,
    "Mapping keys are strings (not 1:, true:, ~: or a list).",
    why=(
        "Kubernetes objects are JSON, whose keys are strings. YAML reads `true:`, `on:`, `1:` and "
        "`~:` as a boolean, a number or null, and a `? [a, b]` key as a list; turned into JSON "
        'they become different strings in different tools ("true", "True", "1"), or fail.'
    ),
    fix=('Quote the key ("true":, "1":), or use a string key instead of a list or mapping.'),
)
NUMBER_RANGE = Rule(
    "number-range",
    _S,
    "Numbers are finite (no .inf, .nan, 1e5000) and integers fit in 64 bits, as in Kubernetes.",
    why=(
        "Kubernetes reads integers as 64-bit and numbers as finite doubles. `.inf`, `.nan`, "
        "`1e5000` and integers beyond 64 bits have no value there: the API server refuses them, "
        "or a tool rounds them to a different number than the file shows."
    ),
    fix=("Write a number within range; if the value is text (an ID, a version), quote it."),
)
DOCUMENT_SHAPE = Rule(
    "document-shape",
    _S,
    "Every document is a mapping.",
    why=(
        "Every document of an inventory is one object: a mapping with apiVersion and kind. A list "
        "or a scalar document is none of tasgen's kinds, and ignoring it would drop what its "
        "author meant to declare (a list of nodes without its NodeInventory around it, say)."
    ),
    fix=(
        "Wrap the content in its object (e.g. a NodeInventory with the list under nodes:), or "
        "delete the document; an empty document between two --- lines is fine."
    ),
)

RULES = (
    FILE_UNREADABLE,
    SYMLINK_OUTSIDE,
    YAML_SYNTAX,
    JSON_SYNTAX,
    DUPLICATE_KEY,
    YAML_ALIAS_LIMIT,
    YAML_ALIAS_CYCLE,
    YAML_DEPTH,
    YAML_TAG,
    YAML_TAG_MISMATCH,
    MAPPING_KEY,
    NUMBER_RANGE,
    DOCUMENT_SHAPE,
    CLUSTER_UNREADABLE,
)
