package checks

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Kind is one kind of rollout check, registered by its own file with Register: the field of
// RolloutCheck that holds it, how that field converts into the Spec the kind compiles, the
// Secret its credentials come from, and how messages and `convoy plan` name it. T is the
// field's API type, e.g. convoyv1alpha1.PrometheusCheck.
type Kind[T any] struct {
	// Name is the kind's field of RolloutCheck in JSON ("prometheus"): CheckForecast.Kind of
	// `convoy plan`, and the order of the kinds in messages, which is the API type's.
	Name string
	// Field returns the check's field of this kind; nil when the check is of another kind.
	Field func(c *convoyv1alpha1.RolloutCheck) *T
	// Spec converts the field into the plain Spec the kind compiles.
	Spec func(f *T) Spec
	// SecretRef returns the Secret the field names for credentials; nil when it names none. A
	// kind that takes no credentials leaves SecretRef nil.
	SecretRef func(f *T) *convoyv1alpha1.SecretReference
	// Address returns the field's name and the URL the credentials are sent to ("http.url",
	// "https://..."), so that credentials over http:// are refused before any I/O
	// (InsecureCredentials). A kind with a SecretRef must set it.
	Address func(f *T) (field, address string)
	// Subject says what the check asks, for the planner's message of a failed check: "query
	// `up` with condition `values.all(v, v > 0)`".
	Subject func(f *T) string
}

// Spec is a check of one kind in plain types, which compile into an Evaluator: *PrometheusCheck,
// *AlertsCheck or *HTTPCheck, or a kind's own.
type Spec interface {
	// Compile validates the spec and compiles its templates and conditions before any I/O;
	// every error is a *SpecError naming the field and the rule it breaks.
	Compile() (Evaluator, error)
}

// registered is a Kind with its field's type erased, as the table holds it.
type registered interface {
	name() string
	field(c *convoyv1alpha1.RolloutCheck) (any, bool)
	spec(c *convoyv1alpha1.RolloutCheck) Spec
	secretRef(c *convoyv1alpha1.RolloutCheck) *convoyv1alpha1.SecretReference
	address(c *convoyv1alpha1.RolloutCheck) (string, string)
	subject(c *convoyv1alpha1.RolloutCheck) string
}

// kinds is the table of the registered kinds, in the order of their fields in RolloutCheck;
// kinds that are not fields of it (a test's) come last. Register fills it during the package
// initialisation of the kinds' files, before anything reads it.
var kinds []registered

// Register adds kind k to the table; each kind's file calls it from an init function. It
// panics when k lacks its Name, Field, Spec or Subject, or when a kind of that name is
// registered already: a programming error found when the binary starts.
func Register[T any](k Kind[T]) {
	if k.Name == "" || k.Field == nil || k.Spec == nil || k.Subject == nil {
		panic(fmt.Sprintf("checks.Register: kind %q lacks its Name, Field, Spec or Subject", k.Name))
	}
	if k.SecretRef != nil && k.Address == nil {
		panic(fmt.Sprintf("checks.Register: kind %q takes credentials (SecretRef) but does not say where they go (Address)", k.Name))
	}
	if slices.Contains(Kinds(), k.Name) {
		panic(fmt.Sprintf("checks.Register: kind %q is registered twice", k.Name))
	}
	kinds = append(kinds, k)
	slices.SortStableFunc(kinds, func(a, b registered) int { return apiOrder(a.name()) - apiOrder(b.name()) })
}

// apiOrder returns the position of name among the JSON names of RolloutCheck's fields, or
// their count when it is not one of them.
func apiOrder(name string) int {
	t := reflect.TypeFor[convoyv1alpha1.RolloutCheck]()
	for i := range t.NumField() {
		if json, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); json == name {
			return i
		}
	}
	return t.NumField()
}

// Kinds returns the names of the registered kinds, in the order of RolloutCheck's fields.
func Kinds() []string {
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		names = append(names, k.name())
	}
	return names
}

// kindOf returns the first registered kind whose field c sets, and how many kinds it sets.
func kindOf(c *convoyv1alpha1.RolloutCheck) (registered, int) {
	var first registered
	set := 0
	for _, k := range kinds {
		if _, ok := k.field(c); ok {
			set++
			if first == nil {
				first = k
			}
		}
	}
	return first, set
}

// CompileRolloutCheck converts c through the table into its kind's Spec and compiles it (see
// Compile). A check that sets no kind's field, or more than one, is a *SpecError.
func CompileRolloutCheck(c *convoyv1alpha1.RolloutCheck) (*Check, error) {
	k, set := kindOf(c)
	if set != 1 {
		return nil, specError("check", "must set exactly one of "+joinKinds(), fmt.Errorf("sets %d", set))
	}
	return Compile(k.spec(c))
}

// joinKinds lists the registered kinds for a message: "prometheus, alerts and http".
func joinKinds() string {
	names := Kinds()
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// KindOf names the kind of c: its registered field that is set, "" when none is.
func KindOf(c *convoyv1alpha1.RolloutCheck) string {
	if k, _ := kindOf(c); k != nil {
		return k.name()
	}
	return ""
}

// SecretRef returns the Secret c's credentials come from; nil when it names none.
func SecretRef(c *convoyv1alpha1.RolloutCheck) *convoyv1alpha1.SecretReference {
	if k, _ := kindOf(c); k != nil {
		return k.secretRef(c)
	}
	return nil
}

// Subject says what c asks, for a message: its kind's Subject, "check" when it has no kind.
func Subject(c *convoyv1alpha1.RolloutCheck) string {
	if k, _ := kindOf(c); k != nil {
		return k.subject(c)
	}
	return "check"
}

// Key identifies what c evaluates: the fields of its kinds, without its name and limits, so
// that the same check in spec.checks and in a partition policy is compiled and run once, and a
// changed one never takes another's result.
func Key(c *convoyv1alpha1.RolloutCheck) string {
	var sb strings.Builder
	for _, k := range kinds {
		if f, ok := k.field(c); ok {
			raw, _ := json.Marshal(f) // API types always marshal
			fmt.Fprintf(&sb, "%s:%s;", k.name(), raw)
		}
	}
	return sb.String()
}

func (k Kind[T]) name() string { return k.Name }

func (k Kind[T]) field(c *convoyv1alpha1.RolloutCheck) (any, bool) {
	f := k.Field(c)
	return f, f != nil
}

func (k Kind[T]) spec(c *convoyv1alpha1.RolloutCheck) Spec { return k.Spec(k.Field(c)) }

func (k Kind[T]) secretRef(c *convoyv1alpha1.RolloutCheck) *convoyv1alpha1.SecretReference {
	if k.SecretRef == nil {
		return nil
	}
	return k.SecretRef(k.Field(c))
}

func (k Kind[T]) address(c *convoyv1alpha1.RolloutCheck) (string, string) {
	if k.Address == nil {
		return "", ""
	}
	return k.Address(k.Field(c))
}

func (k Kind[T]) subject(c *convoyv1alpha1.RolloutCheck) string { return k.Subject(k.Field(c)) }

// quoteSubject quotes text for a Subject between backquotes, which leave PromQL's and CEL's
// double quotes readable; text that holds a backquote or a control character is quoted by %q.
func quoteSubject(text string) string {
	if strings.ContainsFunc(text, func(r rune) bool { return r == '`' || unicode.IsControl(r) }) {
		return strconv.Quote(text)
	}
	return "`" + text + "`"
}
