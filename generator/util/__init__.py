"""Small helpers with no knowledge of tasgen's kinds: performance idioms kept apart, so that a
check reads as what it checks."""
