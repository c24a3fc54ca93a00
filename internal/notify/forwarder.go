package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Defaults of Options.
const (
	// DefaultQueueSize is how many events may wait to be posted.
	DefaultQueueSize = 1000
	// DefaultTimeout bounds one POST.
	DefaultTimeout = 15 * time.Second
	// DefaultRetries is how many times a failed POST is tried again.
	DefaultRetries = 3
	// DefaultBackoff is the wait before the first retry; it doubles with each retry.
	DefaultBackoff = time.Second
)

// annotationPrefix is the prefix of the annotations posted as metadata, without it.
const annotationPrefix = "convoy.dev/"

// Options tune a Forwarder.
type Options struct {
	// Address is the URL events are POSTed to, e.g. notification-controller's
	// http://notification-controller.flux-system.svc.cluster.local./ (required).
	Address string
	// Scheme resolves the kinds of typed objects (required).
	Scheme *runtime.Scheme
	// QueueSize, Timeout, Retries and Backoff default to the Default* constants.
	QueueSize int
	Timeout   time.Duration
	Retries   int
	Backoff   time.Duration
	// Log receives dropped events; default: discard.
	Log logr.Logger
}

// Forwarder posts events to an HTTP endpoint. Start its worker with Run.
type Forwarder struct {
	opts     Options
	client   *http.Client
	queue    chan eventv1.Event
	instance string
}

// NewForwarder checks opts and returns a Forwarder.
func NewForwarder(opts Options) (*Forwarder, error) {
	u, err := url.Parse(opts.Address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--events-addr %q: want an http:// or https:// URL", opts.Address)
	}
	if opts.Scheme == nil {
		return nil, fmt.Errorf("notify: no scheme")
	}
	opts = opts.withDefaults()
	host, _ := os.Hostname()
	return &Forwarder{opts: opts, client: &http.Client{Timeout: opts.Timeout},
		queue: make(chan eventv1.Event, opts.QueueSize), instance: host}, nil
}

func (o Options) withDefaults() Options {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Retries < 0 {
		o.Retries = 0
	} else if o.Retries == 0 {
		o.Retries = DefaultRetries
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return o
}

// flushTimeout bounds how long Run keeps posting the queued events once its context is done.
const flushTimeout = 5 * time.Second

// Run posts queued events in order until ctx is done, then posts what is still queued, once
// each, for at most flushTimeout: the last events of a controller that stops are not lost.
func (f *Forwarder) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			f.flush()
			return nil
		case e := <-f.queue:
			f.deliver(ctx, e)
		}
	}
}

// flush posts the queued events once each, until the queue is empty or flushTimeout passed.
func (f *Forwarder) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	for ctx.Err() == nil {
		select {
		case e := <-f.queue:
			if err := f.post(ctx, e); err != nil {
				f.opts.Log.Error(err, "Dropping an event at shutdown", "reason", e.Reason)
			}
		default:
			return
		}
	}
}

// deliver posts one event, retrying with backoff, and logs it when it gives up.
func (f *Forwarder) deliver(ctx context.Context, e eventv1.Event) {
	wait := f.opts.Backoff
	var err error
	for attempt := 0; attempt <= f.opts.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait *= 2
		}
		if err = f.post(ctx, e); err == nil {
			return
		}
	}
	f.opts.Log.Error(err, "Dropping an event the endpoint did not accept", "reason", e.Reason,
		"kind", e.InvolvedObject.Kind, "name", e.InvolvedObject.Name)
}

// post sends one event as JSON; any status but 2xx is an error.
func (f *Forwarder) post(ctx context.Context, e eventv1.Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.opts.Address, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", f.opts.Address, resp.Status)
	}
	return nil
}

// enqueue converts and queues an event, dropping it when the queue is full.
func (f *Forwarder) enqueue(controller string, regarding runtime.Object, annotations map[string]string, eventType, reason, note string, args ...any) {
	e, err := f.event(controller, regarding, annotations, eventType, reason, fmt.Sprintf(note, args...))
	if err != nil {
		f.opts.Log.Error(err, "Cannot forward an event", "reason", reason)
		return
	}
	select {
	case f.queue <- e:
	default:
		f.opts.Log.Info("Dropping an event: the queue is full", "reason", reason, "name", e.InvolvedObject.Name)
	}
}

// event builds the Flux event of one Kubernetes event.
func (f *Forwarder) event(controller string, regarding runtime.Object, annotations map[string]string, eventType, reason, message string) (eventv1.Event, error) {
	ref, err := reference(f.opts.Scheme, regarding)
	if err != nil {
		return eventv1.Event{}, err
	}
	severity := eventv1.EventSeverityInfo
	if eventType == corev1.EventTypeWarning {
		severity = eventv1.EventSeverityError
	}
	e := eventv1.Event{InvolvedObject: ref, Severity: severity, Timestamp: metav1.Now(), Message: message,
		Reason: reason, ReportingController: controller, ReportingInstance: f.instance}
	for k, v := range annotations {
		if key, ok := strings.CutPrefix(k, annotationPrefix); ok && v != "" {
			if e.Metadata == nil {
				e.Metadata = map[string]string{}
			}
			e.Metadata[key] = v
		}
	}
	return e, nil
}

// reference returns the object reference of an event's object.
func reference(scheme *runtime.Scheme, obj runtime.Object) (corev1.ObjectReference, error) {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return corev1.ObjectReference{}, err
	}
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return corev1.ObjectReference{}, err
	}
	return corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: m.GetNamespace(),
		Name: m.GetName(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion()}, nil
}
