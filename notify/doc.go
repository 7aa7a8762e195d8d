// Package notify tells webhooks when a step is held for an operator and
// when the hold is settled. It follows the journal's event feed from a
// durable cursor per webhook, so that each such event is delivered at
// least once, in order, across crashes and restarts.
//
// # Events
//
// Two kinds of journal events are notified (see Kind): a step put on hold
// (EventHeld, or EventAbandoned with a hold) is KindHeld, "step.held"; an
// operator's approval or resolution (EventApproved, EventResolved) is
// KindSettled, "step.settled". Every other event only moves the cursor.
// A Payload carries the event, the step's api, route and redacted key
// summary (journal.Step.KeyFields, as operators see it), and the step's
// page in the web console; never a credential, a note or a body value
// beyond that summary.
//
// # Delivery
//
// Each webhook has its own worker and cursor (the seq of the last event
// handled). A worker reads the feed after its cursor, delivers the next
// notifiable event, retrying with exponential backoff and jitter until it
// is delivered or its attempts are spent, and only then moves the cursor
// past it. A crash before the move delivers the event again after the
// restart: receivers dedupe on the Toolguard-Event-Id header (the event's
// seq). A failing endpoint holds back its own later events, never another
// webhook's. A dial the egress policy refuses (ErrRefused) is not retried.
//
// # Signature
//
// A webhook with a secret gets Toolguard-Signature: t=<unix
// seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")> on each attempt, as
// Stripe signs its webhooks; Verify checks one.
//
// # Replicas
//
// Replicas sharing a PostgreSQL journal share the cursors, and each
// worker runs its passes under Options.Exclusive (an advisory lock per
// webhook), so one replica delivers each event; a cursor only moves by
// compare-and-set, so a replica that lost the lock mid-pass cannot move it
// back. A bbolt journal has one process, which keeps its cursors in a file
// beside the journal (FileCursors).
package notify
