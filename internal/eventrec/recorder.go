package eventrec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/reference"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/convoy-gitops/convoy/internal/pass"
)

// Bounds and intervals of a Provider.
const (
	// QueueSize is how many events may wait to be written.
	QueueSize = 1000
	// CacheSize is how many events the series cache remembers.
	CacheSize = 4096
	// SeriesWindow is how long after its last occurrence an event's repeat joins its series;
	// a later repeat starts a new Event.
	SeriesWindow = 6 * time.Minute
	// SeriesUpdateInterval is the shortest time between two writes of a series' count.
	SeriesUpdateInterval = 10 * time.Minute
	// Attempts is how many times a write that failed for a transient reason is tried in all.
	Attempts = 3
	// WriteTimeout bounds one write.
	WriteTimeout = 10 * time.Second
	// DrainTimeout bounds the writes of the events still queued when the Provider stops.
	DrainTimeout = 5 * time.Second
	// maxNoteBytes is the API's limit on an Event's note.
	maxNoteBytes = 1024
	// maxNameBytes is the API's limit on an Event's name.
	maxNameBytes = 253
)

// Options configure a Provider.
type Options struct {
	// Client writes the Events (required).
	Client client.Client
	// Scheme resolves the kinds of typed objects (required).
	Scheme *runtime.Scheme
	// Log receives the events that could not be recorded; default: discard.
	Log logr.Logger
	// Now returns the current time; default: time.Now.
	Now func() time.Time
}

// Provider hands out Recorders and writes what they record. Run Start once, on every replica.
type Provider struct {
	opts     Options
	instance string
	queue    chan *eventsv1.Event
	series   *seriesCache
	budgets  *budgets
	stamp    atomic.Int64 // the last name stamp handed out
	started  atomic.Bool
	dropped  atomic.Int64 // events dropped because the queue was full
	// overBudget counts events dropped because their object had too many (budgets).
	overBudget atomic.Int64
}

// NewProvider returns a Provider writing through opts.Client.
func NewProvider(opts Options) *Provider {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	host, _ := os.Hostname()
	return &Provider{opts: opts, instance: host, queue: make(chan *eventsv1.Event, QueueSize),
		series: newSeriesCache(CacheSize), budgets: newBudgets()}
}

// Recorder returns the recorder of the controller named controller, its events' reporting
// controller.
func (p *Provider) Recorder(controller string) recorder.EventRecorder {
	return &Recorder{provider: p, controller: controller}
}

// NeedLeaderElection is false: every replica writes the events it records.
func (p *Provider) NeedLeaderElection() bool { return false }

// Start writes the queued events in order until ctx is done, then those still queued, for at
// most DrainTimeout: the manager stops it before the reconcilers, whose last events are lost.
func (p *Provider) Start(ctx context.Context) error {
	if !p.started.CompareAndSwap(false, true) {
		return errors.New("the event recorder is already started")
	}
	for {
		select {
		case <-ctx.Done():
			p.drain(ctx)
			return nil
		case ev := <-p.queue:
			p.write(ctx, ev)
		}
	}
}

// drain writes the queued events until the queue is empty or DrainTimeout has passed.
func (p *Provider) drain(stopped context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(stopped), DrainTimeout)
	defer cancel()
	for ctx.Err() == nil {
		select {
		case ev := <-p.queue:
			p.write(ctx, ev)
		default:
			return
		}
	}
}

// Recorder records the events of one controller.
type Recorder struct {
	provider   *Provider
	controller string
}

var _ recorder.EventRecorder = (*Recorder)(nil)

// Eventf records an event about regarding.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventType, reason, action, note string, args ...any) {
	r.AnnotatedEventf(regarding, related, nil, eventType, reason, action, note, args...)
}

// AnnotatedEventf records an event about regarding with annotations. It never blocks: when the
// queue is full the event is dropped and logged.
func (r *Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventType, reason, action, note string, args ...any) {
	p := r.provider
	ev, err := p.newEvent(r.controller, regarding, related, annotations, eventType, reason, action, fmt.Sprintf(note, args...))
	if err != nil {
		p.opts.Log.Error(err, "Could not record an event", "reason", reason)
		return
	}
	select {
	case p.queue <- ev:
	default:
		if n := p.dropped.Add(1); n == 1 || n%100 == 0 {
			p.opts.Log.Info("Dropped events: the queue is full", "dropped", n, "regarding", ev.Regarding.Name,
				"namespace", ev.Namespace, "reason", reason)
		}
	}
}

// newEvent builds the Event of one occurrence.
func (p *Provider) newEvent(controller string, regarding, related runtime.Object, annotations map[string]string,
	eventType, reason, action, note string) (*eventsv1.Event, error) {
	if eventType != corev1.EventTypeNormal && eventType != corev1.EventTypeWarning {
		return nil, fmt.Errorf("event type %q is neither %s nor %s", eventType, corev1.EventTypeNormal, corev1.EventTypeWarning)
	}
	ref, err := reference.GetReference(p.opts.Scheme, regarding)
	if err != nil {
		return nil, fmt.Errorf("referencing the event's object: %w", err)
	}
	var rel *corev1.ObjectReference
	if related != nil {
		if rel, err = reference.GetReference(p.opts.Scheme, related); err != nil {
			p.opts.Log.Error(err, "Recording an event without its related object", "reason", reason)
		}
	}
	now := p.opts.Now()
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: p.eventName(ref.Name), Namespace: namespace, Annotations: maps.Clone(annotations)},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: controller,
		ReportingInstance:   controller + "-" + p.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             rel,
		Note:                pass.CutUTF8(strings.ToValidUTF8(note, "\uFFFD"), maxNoteBytes),
		Type:                eventType,
	}, nil
}

// eventName names a new Event about the object named name as client-go does: the name, cut to
// fit, and the time in nanoseconds, which it moves on by one when a name of this Provider already
// had it. A name that is no DNS subdomain gives a random one.
func (p *Provider) eventName(name string) string {
	stamp := p.opts.Now().UnixNano()
	for {
		last := p.stamp.Load()
		stamp = max(stamp, last+1)
		if p.stamp.CompareAndSwap(last, stamp) {
			break
		}
	}
	suffix := fmt.Sprintf(".%x", stamp)
	full := strings.TrimRight(pass.CutUTF8(name, maxNameBytes-len(suffix)), ".-") + suffix
	if len(validation.IsDNS1123Subdomain(full)) > 0 {
		return string(uuid.NewUUID())
	}
	return full
}

// manager is a manager whose event recorders are a Provider's.
type manager struct {
	ctrl.Manager
	provider *Provider
}

// WrapManager returns mgr handing out the recorders of a new Provider, which it adds to mgr to
// run with it.
func WrapManager(mgr ctrl.Manager) (ctrl.Manager, error) {
	p := NewProvider(Options{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Log: ctrl.Log.WithName("event-recorder")})
	if err := mgr.Add(p); err != nil {
		return nil, err
	}
	return &manager{Manager: mgr, provider: p}, nil
}

// GetEventRecorder returns the Provider's recorder of name.
func (m *manager) GetEventRecorder(name string) recorder.EventRecorder {
	return m.provider.Recorder(name)
}
