"""Names of the review stage's rollout metrics, shared by the stage (which publishes them)
and the CDK app (whose canary and rollback alarms read them; docs/rollout.md).

Each is published twice per job: once with the dimensions {service, PromptTrack} (track =
"stable" or "canary": what the alarms watch) and once with {service, PromptVersion} (for
dashboards comparing versions)."""

from __future__ import annotations

TRACK_DIMENSION = "PromptTrack"
VERSION_DIMENSION = "PromptVersion"
TRACK_STABLE = "stable"
TRACK_CANARY = "canary"

# One per job the review stage completed.
JOBS_REVIEWED = "ReviewJobsReviewed"
# One per model answer parsed (a job has one per chunk).
ANSWERS = "ReviewAnswers"
# Parser diagnostics, counted per answer.
RESPONSES_REJECTED = "ReviewResponsesRejected"
FINDINGS_DROPPED = "ReviewFindingsDropped"
COERCIONS = "ReviewCoercions"
# Findings kept after parsing, reconciliation, line checks and merging (before noise controls).
VALID_FINDINGS = "ReviewValidFindings"
# Provider-reported tokens.
INPUT_TOKENS = "ReviewInputTokens"
OUTPUT_TOKENS = "ReviewOutputTokens"

ROLLOUT_METRICS = (
    JOBS_REVIEWED,
    ANSWERS,
    RESPONSES_REJECTED,
    FINDINGS_DROPPED,
    COERCIONS,
    VALID_FINDINGS,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
)
