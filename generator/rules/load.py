"""Rules of the load stage: files and folders, bytes, YAML and JSON syntax."""

from generator.rules.base import Rule, Stage

_S = Stage.LOAD

FILE_UNREADABLE = Rule(
    "file-unreadable",
    _S,
    "Every inventory file and folder can be read: a regular file of UTF-8 text, a folder that can be listed.",
)
SYMLINK_OUTSIDE = Rule(
    "symlink-outside",
    _S,
    "A symbolic link below the inventory folder resolves inside it (nothing outside is ever read).",
)
YAML_SYNTAX = Rule(
    "yaml-syntax", _S, "A file is valid YAML, of characters YAML allows (no NUL or control characters)."
)
JSON_SYNTAX = Rule(
    "json-syntax", _S, "A .json file is valid JSON of Unicode text (no unpaired surrogate escapes)."
)
DUPLICATE_KEY = Rule("duplicate-key", _S, "A mapping has each key once.")
YAML_ALIAS_LIMIT = Rule(
    "yaml-alias-limit",
    _S,
    "YAML aliases would not expand beyond a bounded size or depth (checked before expanding).",
)
YAML_DEPTH = Rule(
    "yaml-depth",
    _S,
    "YAML nests at most 500 levels, aliases expanded (checked before parsing: deeper crashes parsers).",
)
YAML_TAG = Rule(
    "yaml-tag", _S, "No YAML tags beyond the core schema's (!!str, !!int, ...): no !foo, !!binary, !!set."
)
MAPPING_KEY = Rule("mapping-key", _S, "Mapping keys are strings (not 1:, true:, ~: or a list).")
NUMBER_RANGE = Rule(
    "number-range",
    _S,
    "Numbers are finite (no .inf, .nan, 1e5000) and integers fit in 64 bits, as in Kubernetes.",
)
DOCUMENT_SHAPE = Rule("document-shape", _S, "Every document is a mapping.")

RULES = (
    FILE_UNREADABLE,
    SYMLINK_OUTSIDE,
    YAML_SYNTAX,
    JSON_SYNTAX,
    DUPLICATE_KEY,
    YAML_ALIAS_LIMIT,
    YAML_DEPTH,
    YAML_TAG,
    MAPPING_KEY,
    NUMBER_RANGE,
    DOCUMENT_SHAPE,
)
