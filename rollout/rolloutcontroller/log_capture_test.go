package rolloutcontroller

import (
	"regexp"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// controllerLog is what the controllers of the suite log at the default verbosity, in the text
// format of the binary's logger (klog's).
var controllerLog fleet.SyncBuffer

// teeSink sends every log call to each of the loggers whose verbosity enables it.
type teeSink []logr.Logger

// Init makes each logger report its caller's caller: the tee is one call deeper.
func (t teeSink) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	for _, l := range t {
		l.GetSink().Init(info)
	}
}

// Enabled reports whether some logger logs at level.
func (t teeSink) Enabled(level int) bool {
	for _, l := range t {
		if l.GetSink().Enabled(level) {
			return true
		}
	}
	return false
}

func (t teeSink) Info(level int, msg string, keysAndValues ...any) {
	for _, l := range t {
		if l.GetSink().Enabled(level) {
			l.GetSink().Info(level, msg, keysAndValues...)
		}
	}
}

func (t teeSink) Error(err error, msg string, keysAndValues ...any) {
	for _, l := range t {
		l.GetSink().Error(err, msg, keysAndValues...)
	}
}

func (t teeSink) WithValues(keysAndValues ...any) logr.LogSink {
	out := make(teeSink, len(t))
	for i, l := range t {
		out[i] = l.WithValues(keysAndValues...)
	}
	return out
}

func (t teeSink) WithName(name string) logr.LogSink {
	out := make(teeSink, len(t))
	for i, l := range t {
		out[i] = l.WithName(name)
	}
	return out
}

// logLine is one line of the captured log: its text, its message and its keys.
type logLine struct {
	text, msg string
	keys      map[string]string
}

var (
	// logMessage matches the header and the quoted message of a klog text line.
	logMessage = regexp.MustCompile(`^[IEW]\d{4} [^\]]*\] "((?:[^"\\]|\\.)*)"`)
	// logKey matches one key="value" or key=value pair.
	logKey = regexp.MustCompile(`([A-Za-z][A-Za-z0-9]*)=("(?:[^"\\]|\\.)*"|[^ ]*)`)
)

// logLines parses the captured log, keeping the lines whose key matches value.
func logLines(key, value string) []logLine {
	var out []logLine
	for _, text := range strings.Split(controllerLog.String(), "\n") {
		m := logMessage.FindStringSubmatchIndex(text)
		if m == nil {
			continue
		}
		line := logLine{text: text, msg: text[m[2]:m[3]], keys: map[string]string{}}
		for _, kv := range logKey.FindAllStringSubmatch(text[m[1]:], -1) {
			line.keys[kv[1]] = strings.Trim(kv[2], `"`)
		}
		if line.keys[key] == value {
			out = append(out, line)
		}
	}
	return out
}

// logOnFailure prints, when t fails, the lines of the captured log that mention text: what the
// controllers did about the objects of the test.
func logOnFailure(t *testing.T, text string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, line := range strings.Split(controllerLog.String(), "\n") {
			if strings.Contains(line, text) {
				t.Log(line)
			}
		}
	})
}
