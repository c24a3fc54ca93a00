package promotion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// State is what a management cluster did with one commit.
type State string

// The states of a commit in a Record.
const (
	// Progressing: the commit is being rolled out; the record carries the partitions and
	// clusters done.
	Progressing State = "Progressing"
	// Completed: every partition is done, after its last soak and checks.
	Completed State = "Completed"
	// Failed: failures stopped the commit's rollout.
	Failed State = "Failed"
	// Rejected: a rollback rejected the commit.
	Rejected State = "Rejected"
	// Superseded: a newer commit replaced it before it completed.
	Superseded State = "Superseded"
)

// MaxCommits is the number of commits a Record keeps, newest first.
const MaxCommits = 20

// MaxRecordBytes bounds what a reader decodes of one record.
const MaxRecordBytes = 64 << 10

// RecordVersion is the format of the records this package writes and reads.
const RecordVersion = "convoy.dev/promotion-record/v1"

// Record is what one management cluster publishes for one HostedClusterPackage.
type Record struct {
	// Version is RecordVersion.
	Version string `json:"version"`
	// ManagementCluster and Sector name the publisher.
	ManagementCluster string `json:"managementCluster"`
	Sector            string `json:"sector"`
	// Key is the HostedClusterPackage's promotion key.
	Key string `json:"key"`
	// Commits are the commits it rolled out, newest first.
	Commits []CommitRecord `json:"commits"`
}

// CommitRecord is what a management cluster did with one commit.
type CommitRecord struct {
	// Commit is the full hexadecimal commit id.
	Commit string `json:"commit"`
	// State is the outcome so far.
	State State `json:"state"`
	// PartitionsDone of Partitions, and ClustersDone (progressed) of Clusters.
	PartitionsDone int `json:"partitionsDone"`
	Partitions     int `json:"partitions"`
	ClustersDone   int `json:"clustersDone"`
	Clusters       int `json:"clusters"`
	// StartedAt is when the commit became the rollout's; Since is when it entered State.
	StartedAt time.Time `json:"startedAt"`
	Since     time.Time `json:"since"`
}

// Find returns the record of commit; false when the record has none.
func (r *Record) Find(commit string) (CommitRecord, bool) {
	for _, c := range r.Commits {
		if c.Commit == commit {
			return c, true
		}
	}
	return CommitRecord{}, false
}

// Merge returns r with c as its newest commit: c replaces the commit's earlier entry (keeping
// its StartedAt, and its Since when the state did not change); a Progressing older commit
// becomes Superseded; at most MaxCommits are kept.
func (r Record) Merge(c CommitRecord) Record {
	out := make([]CommitRecord, 0, len(r.Commits)+1)
	for _, old := range r.Commits {
		switch {
		case old.Commit == c.Commit:
			if !old.StartedAt.IsZero() {
				c.StartedAt = old.StartedAt
			}
			if old.State == c.State && !old.Since.IsZero() {
				c.Since = old.Since
			}
		case old.State == Progressing:
			old.State, old.Since = Superseded, c.Since
			out = append(out, old)
		default:
			out = append(out, old)
		}
	}
	out = append([]CommitRecord{c}, out...)
	r.Commits = out[:min(len(out), MaxCommits)]
	return r
}

// Encode returns the record as indented JSON, the form stored on the bus.
func (r Record) Encode() ([]byte, error) {
	r.Version = RecordVersion
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return json.MarshalIndent(r, "", "  ")
}

// DecodeRecord reads a record published on the bus: at most MaxRecordBytes, no unknown field,
// and every rule of Validate.
func DecodeRecord(data []byte) (Record, error) {
	if len(data) > MaxRecordBytes {
		return Record{}, fmt.Errorf("record is %d bytes, more than %d", len(data), MaxRecordBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("decoding record: %w", err)
	}
	if r.Version != RecordVersion {
		return Record{}, fmt.Errorf("record version %q is not %q", r.Version, RecordVersion)
	}
	return r, r.Validate()
}

// namePattern is what a sector, management cluster or key may be: a DNS label, so that it is
// one segment of a Git ref and of a commit status context.
var namePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// commitPattern is a full SHA-1 or SHA-256 commit id.
var commitPattern = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// ValidName returns an error naming what when s is not a DNS label.
func ValidName(what, s string) error {
	if !namePattern.MatchString(s) {
		return fmt.Errorf("%s %q is not a DNS label (lower-case letters, digits and '-', at most 63)", what, s)
	}
	return nil
}

// Validate checks the names, the commits and the states of r.
func (r Record) Validate() error {
	err := errors.Join(ValidName("management cluster", r.ManagementCluster), ValidName("sector", r.Sector),
		ValidName("key", r.Key))
	if err != nil {
		return err
	}
	if len(r.Commits) > MaxCommits {
		return fmt.Errorf("record holds %d commits, more than %d", len(r.Commits), MaxCommits)
	}
	for i, c := range r.Commits {
		if !commitPattern.MatchString(c.Commit) {
			return fmt.Errorf("commits[%d]: %q is not a full commit id", i, c.Commit)
		}
		switch c.State {
		case Progressing, Completed, Failed, Rejected, Superseded:
		default:
			return fmt.Errorf("commits[%d]: state %q is not one of Progressing, Completed, Failed, Rejected, Superseded", i, c.State)
		}
	}
	return nil
}
