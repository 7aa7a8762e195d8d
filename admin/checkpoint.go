package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/journal"
)

// Checkpoint is an agent's compact resume state: facts and references,
// never hidden reasoning or raw tool output. Unknown fields are refused.
type Checkpoint struct {
	Goal          string     `json:"goal"`
	Constraints   []string   `json:"constraints,omitempty"`
	Plan          []string   `json:"plan,omitempty"`
	Unresolved    []string   `json:"unresolved,omitempty"`
	Artifacts     []Artifact `json:"artifacts,omitempty"`
	PromptVersion string     `json:"prompt_version,omitempty"`
	PolicyVersion string     `json:"policy_version,omitempty"`
}

// Artifact references a produced artifact by id and content hash.
type Artifact struct {
	ID     string `json:"id"`
	SHA256 string `json:"sha256"`
	URI    string `json:"uri,omitempty"`
}

// Checkpoint limits: a checkpoint holds concise facts.
const (
	maxCheckpointBytes = 64 << 10
	maxCheckpointText  = 2048
	maxCheckpointItems = 100
)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// validate checks a checkpoint's shape and sizes.
func (c *Checkpoint) validate() error {
	if strings.TrimSpace(c.Goal) == "" {
		return errors.New("goal: required")
	}
	texts := map[string][]string{"goal": {c.Goal}, "constraints": c.Constraints, "plan": c.Plan, "unresolved": c.Unresolved}
	for field, list := range texts {
		if len(list) > maxCheckpointItems {
			return fmt.Errorf("%w: %s: %d items (max %d)", errTooLarge, field, len(list), maxCheckpointItems)
		}
		for i, t := range list {
			if len(t) > maxCheckpointText {
				return fmt.Errorf("%w: %s[%d]: %d bytes (max %d): store raw tool output as an artifact (id and sha256), not in the checkpoint", errTooLarge, field, i, len(t), maxCheckpointText)
			}
		}
	}
	if len(c.Artifacts) > maxCheckpointItems {
		return fmt.Errorf("%w: artifacts: %d items (max %d)", errTooLarge, len(c.Artifacts), maxCheckpointItems)
	}
	for i, a := range c.Artifacts {
		if a.ID == "" || !sha256Hex.MatchString(a.SHA256) {
			return fmt.Errorf("artifacts[%d]: want an id and a lowercase hex sha256 (got id %q, sha256 %q)", i, a.ID, a.SHA256)
		}
	}
	return nil
}

// putCheckpoint validates a checkpoint body and stores it.
func putCheckpoint(r *http.Request, j Journal) (journal.Workflow, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxCheckpointBytes+1))
	if err != nil {
		return journal.Workflow{}, badRequest(fmt.Errorf("read body: %w", err))
	}
	if len(data) > maxCheckpointBytes {
		return journal.Workflow{}, fmt.Errorf("%w: a checkpoint is at most %d bytes of concise facts; store large content as an artifact (id and sha256)", errCheckpointTooLarge, maxCheckpointBytes)
	}
	var c Checkpoint
	if err := decodeStrict(data, &c); err != nil {
		return journal.Workflow{}, fmt.Errorf("%w: %v (fields: goal, constraints, plan, unresolved, artifacts, prompt_version, policy_version; raw tool output is refused)", errBadCheckpoint, err)
	}
	if err := c.validate(); err != nil {
		return journal.Workflow{}, fmt.Errorf("%w: %w", errBadCheckpoint, err)
	}
	ifVersion, err := parseIfMatch(r.Header.Get("If-Match"))
	if err != nil {
		return journal.Workflow{}, badRequest(err)
	}
	scope, err := checkpointScope(j, r)
	if err != nil {
		return journal.Workflow{}, err
	}
	canon, _ := json.Marshal(c)
	return j.PutCheckpoint(scope, r.PathValue("id"), ifVersion, canon)
}

// parseIfMatch reads If-Match: "7" or 7; nil when absent.
func parseIfMatch(v string) (*uint64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseUint(strings.Trim(strings.TrimPrefix(v, "W/"), `"`), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("If-Match: want a quoted workflow version such as \"3\" (got %s)", v)
	}
	return &n, nil
}
