package proxy

import (
	"github.com/toolguard/toolguard/rules"
)

// Headers (contract, DESIGN.md "Headers").
const (
	HeaderWorkflow      = rules.HeaderWorkflow // part of the key's scope
	HeaderPromptVersion = "Toolguard-Prompt-Version"
	HeaderPolicyVersion = "Toolguard-Policy-Version"
	HeaderKey           = "Toolguard-Key"
	HeaderOutcome       = "Toolguard-Outcome"
	HeaderReplayed      = "Idempotent-Replayed"
	// HeaderKeyExpires says until when the key answers duplicates from the
	// journal (journal.retention after the step's last change); absent when
	// steps are kept forever.
	HeaderKeyExpires = "Toolguard-Key-Expires"
)

// Outcomes carried in Toolguard-Outcome (contract).
const (
	OutcomeForwarded   = "forwarded"
	OutcomeReplayed    = "replayed"
	OutcomeRecovered   = "recovered"
	OutcomeBlocked     = "blocked"
	OutcomePassthrough = "passthrough"
)
