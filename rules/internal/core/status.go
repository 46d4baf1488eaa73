package core

// StatusInfo is one row of a closed status table (spec §5.7): its ok value
// and whether side effects may have occurred when it is reported.
type StatusInfo struct {
	Status      string
	OK          bool
	SideEffects string // "yes", "no", "possible"
	Meaning     string
	Said        string // what a sentence says of a run or step with it: "The run timed out"
}

// Run statuses. The four reserved ones keep their spec meaning.
const (
	StatusSuccess          = "success"
	StatusConditionsNotMet = "conditions_not_met"
	StatusStopped          = "stopped"
	StatusSkipped          = "skipped"
	StatusValidationError  = "validation_error"
	StatusCatalogDrift     = "catalog_drift"
	StatusPromotionDrift   = "promotion_drift"
	StatusPartial          = "partial"
	StatusFailed           = "failed"
	StatusTimeout          = "timeout"
	StatusLimitExceeded    = "limit_exceeded"
	StatusNotConnected     = "not_connected"
	StatusNotAcknowledged  = "not_acknowledged"
	StatusBroken           = "broken"
	StatusInterrupted      = "interrupted"
	StatusCancelled        = "cancelled"
	StatusDenied           = "denied"
	StatusRunning          = "running"
	StatusThrottled        = "throttled"
	StatusNotTriggered     = "not_triggered"
	StatusAssumed          = "assumed"
	StatusApprovalPending  = "approval_pending"
	StatusRuleExists       = "rule_exists"
)

// RunStatuses is the one closed table of run-level statuses; the engine
// reports only these and the closed-sets guide is generated from it.
var RunStatuses = []StatusInfo{
	{StatusSuccess, true, "yes", "the run completed (for a deploy: the rule is installed and armed)", "succeeded"},
	{StatusConditionsNotMet, true, "no", "a trigger fired but a condition was false, so the body did not run", "ended early because a condition was not met"},
	{StatusStopped, true, "possible", "a stop step ended the run on purpose; steps before it ran", "was ended by a stop step"},
	{StatusSkipped, true, "no", "the firing was dropped: mode single and the rule was already running, or queued/parallel at max", "was skipped"},
	{StatusThrottled, true, "no", "the conditions held but the rule's throttle window was open (its body last started less than throttle ago), so the body did not run; output.throttled_until says when it may run again", "was held back by the rule's throttle"},
	{StatusNotTriggered, true, "no", "test runs only: the scenario's trigger would not fire (a held value did not hold for its for on the virtual clock, a schedule does not fire at scenario.now, or the scenario's value does not pass the trigger's filter), so nothing ran; the trigger's entry says why and when it would fire", "did not start because the trigger would not fire"},
	{StatusAssumed, true, "no", "test runs only: the body ran to its end, but some results were not simulated: scenario.waits forced them; each such entry has step status assumed, and outcome.error lists them", "reached its end on assumed results"},
	{StatusValidationError, false, "no", "refused: the program (or input/context) is invalid; diagnostics attached", "was refused as invalid"},
	{StatusCatalogDrift, false, "no", "refused: expected_catalog_version differs from the current catalog_version", "was refused because the catalog changed"},
	{StatusPromotionDrift, false, "no", "refused: an entry the promoted program references changed since promotion", "was refused because an entry it uses changed"},
	{StatusPartial, false, "possible", "the run started and did not complete; the partial trace is attached", "did not complete"},
	{StatusFailed, false, "possible", "a step failed (a call was refused or an expression failed) or a stop step set error", "failed"},
	{StatusTimeout, false, "possible", "the run exceeded its wall-time bound (virtual time in a test run) or the engine's deadline, or a wait timed out without continue_on_timeout", "timed out"},
	{StatusLimitExceeded, false, "possible", "a bound was exceeded: trace entries per run, iterations per loop, promoted-automation call depth, expression memory, the bytes of one value, of one evaluation or of what the run records, the values set steps store, or the operations of one evaluation or of all the run's evaluations together; the message names the limit and the step, and the partial trace is attached", "hit a limit"},
	{StatusNotConnected, false, "possible", "the MQTT broker was unreachable, so a command was refused (never silently dropped)", "could not reach the MQTT broker"},
	{StatusNotAcknowledged, false, "possible", "a command was sent but the MQTT broker did not acknowledge it in time (frozen or overloaded, or the connection was lost first): it may still arrive, so check the device's state before repeating it", "sent a command the MQTT broker did not acknowledge (it may still arrive)"},
	{StatusBroken, false, "no", "a referenced device vanished or changed shape since install; the rule is marked broken", "could not run because the rule is broken"},
	{StatusInterrupted, false, "possible", "the server stopped (or crashed) while the firing was running", "was interrupted when the server stopped"},
	{StatusCancelled, false, "possible", "the run was cancelled: mode restart started a newer firing, or the rule was disabled or removed", "was cancelled"},
	{StatusDenied, false, "no", "the caller may not do this (deploying needs a principal allowed to deploy), or a person declined this deploy's approval (the approval member says who and through which channel; the same request stays declined until the approval expires, a changed program or input asks anew); nothing was installed", "was refused: the caller may not do this, or a person declined it"},
	{StatusApprovalPending, false, "no", "the deploy's risk (destructive or openWorld by default, per the principal's policy) needs a human's approval outside the model; nothing was installed. The response's approval member gives its id, the web page where a human approves it (url) and expires_at; once approved, send the same request again to install it", "is waiting for a human's approval"},
	{StatusRuleExists, false, "no", "the deploy would replace an installed rule of the same name that runs another program or another input, and did not ask to: nothing was installed. The response's replaces member names that rule (program_ref, input, who installed it) and its runs_in_progress, which replacing cancels; send the request again with input.install.replace: true to replace it, or input.install.rule: another name to keep both", "was refused: it would replace an installed rule"},
	{StatusRunning, false, "possible", "a firing whose body has delays or waits is still running (fetch it again later); a crash turns it into interrupted", "is still running"},
}

// Step statuses.
const (
	StepSuccess         = "success"
	StepNotMet          = "not_met"
	StepFailed          = "failed"
	StepTimeout         = "timeout"
	StepStopped         = "stopped"
	StepCancelled       = "cancelled"
	StepLimitExceeded   = "limit_exceeded"
	StepNotConnected    = "not_connected"
	StepNotAcknowledged = "not_acknowledged"
	StepSkipped         = "skipped"
	StepAssumed         = "assumed"
	StepApprovalPending = "approval_pending"
)

// StepStatuses is the one closed table of step-level statuses.
var StepStatuses = []StatusInfo{
	{StepSuccess, true, "yes", "the step completed; a call step's command was published (simulated in a test run); a branch or loop entry completed its activation", "succeeded"},
	{StepNotMet, true, "no", "a condition evaluated to false (output false); the run ends with conditions_not_met. In a test run, the trigger's entry when the scenario's trigger would not fire (the run ends not_triggered)", "was not met"},
	{StepAssumed, true, "no", "test runs only: a wait whose result scenario.waits forced instead of the simulation (output.assumed says what it said); the run then ends assumed, not success", "was assumed"},
	{StepSkipped, true, "no", "a condition was not evaluated because the run was started with conditions skipped (manual run)", "was skipped"},
	{StepStopped, true, "no", "a stop step without error, or a branch or loop entry whose body ended with one", "stopped the run"},
	{StepApprovalPending, false, "no", "the approval entry of a deploy whose risk needs a human's approval that it does not have yet: nothing was installed", "is waiting for a human's approval"},
	{StepTimeout, false, "no", "a wait step's timeout passed before its condition held (with continue_on_timeout the run goes on), or the run's wall-time bound passed during this step", "timed out"},
	{StepFailed, false, "possible", "the step failed (a call was refused, an expression failed, a stop step set error); outcome.error says why. A branch or loop entry is failed when a step inside it failed", "failed"},
	{StepCancelled, false, "possible", "the run was cancelled while this step was running", "was cancelled"},
	{StepLimitExceeded, false, "no", "a bound was exceeded at this step: loop iterations, call depth or expression memory", "hit a limit"},
	{StepNotConnected, false, "no", "a call could not be published because the broker is unreachable", "could not reach the MQTT broker"},
	{StepNotAcknowledged, false, "possible", "a call was published but the broker did not acknowledge it in time: it may still arrive", "was not acknowledged by the MQTT broker (it may still arrive)"},
}

// LookupStatus finds a status in a table.
func LookupStatus(table []StatusInfo, status string) (StatusInfo, bool) {
	for _, s := range table {
		if s.Status == status {
			return s, true
		}
	}
	return StatusInfo{}, false
}
