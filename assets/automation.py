"""When derived assets re-materialize."""

import dagster as dg

_deps_updated = dg.AutomationCondition.any_deps_updated()

# Built from eager()'s parts, changed twice:
# - no 'missing' parts: eager waits while any upstream partition is missing, and in the upload grid
#   most cells are legitimately empty (and a rejected upload must not stall its benchmark);
# - the memory of "an upload changed" is cleared by our own request only in a tick where no
#   dependency updated again. Otherwise an upload landing between our request and the next tick,
#   or while our run is in flight, would be forgotten (the reset would win the tie). Upstream
#   updates made by runs that also targeted this asset do not count, so chains do not re-fire.
ON_UPSTREAM_CHANGE = (
    _deps_updated.since(dg.AutomationCondition.newly_requested() & ~_deps_updated)
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("re-rate when an upload changed")
