package target

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/extsample"
	"github.com/soakd/soakd/internal/nofollow"
	"github.com/soakd/soakd/internal/report"
)

// replicaCheckEvery is how often the replica set is listed for pods that
// restarted, left or joined: a change is seen within about this long.
const replicaCheckEvery = time.Second

// replicaSet samples a service's replicas in a cluster (target.kind
// kubernetes): the pods the selector matches, each scraped at its
// Prometheus endpoint (straight at its IP, or through the API server's pod
// proxy), every round of scrapes summed into one sample of the service
// (extsample.SumReplicas). It lists the pods every replicaCheckEvery: a
// replica that restarts, leaves or joins is an event, which stops the run
// unless target.kubernetes.allow_restarts. It offers the sampler methods
// External reads (SampleNow, Samples, Last).
type replicaSet struct {
	cs kubernetes.Interface
	kc config.KubeTargetConfig
	// offLoopback is target.allow_non_loopback: scrapes of pod IPs off
	// loopback (scrape_via pod_ip) need it, as every other URL does.
	offLoopback bool
	rt          extsample.Runtime
	interval    time.Duration
	timeout     time.Duration
	// endpoint gives a pod's metrics URL and the client that reaches it.
	endpoint func(p *corev1.Pod, port int) (string, *http.Client)
	log      *zap.Logger

	mu      sync.Mutex
	current []*replica // in name order
	events  []report.ReplicaEvent
	ring    []extsample.Sample
	head    int
	cap     int
}

// replica is one pod of the service as it is sampled.
type replica struct {
	info    report.ReplicaInfo
	uid     types.UID
	sampler *extsample.Sampler
}

// name is how the replica is named in the sums' sources: a restart
// changes it, so that no window spans the restart.
func (r *replica) name() string {
	n := r.info.Namespace + "/" + r.info.Pod
	if r.info.Restarts > 0 {
		n += fmt.Sprintf(" (restart %d)", r.info.Restarts)
	}
	return n
}

// openReplicaSet connects to the cluster, waits up to target.ready_timeout
// for target.kubernetes.min_replicas running and ready pods, and opens a
// sampler on each.
func openReplicaSet(ctx context.Context, cfg *config.Config, restCfg *rest.Config, cs kubernetes.Interface, log *zap.Logger) (*replicaSet, error) {
	tc := cfg.Target
	rs := &replicaSet{cs: cs, kc: tc.Kubernetes, offLoopback: tc.AllowNonLoopback, interval: cfg.Sampler.Interval, log: log,
		timeout: min(max(cfg.Sampler.Interval, 500*time.Millisecond), extsample.DefaultTimeout),
		cap:     min(cmpOrInt(cfg.Sampler.MaxSamples, extsample.DefaultMaxSamples), extsample.MaxMaxSamples)}
	if tc.Runtime != "auto" {
		rs.rt = extsample.Runtime(tc.Runtime)
	}
	var err error
	if rs.endpoint, err = endpointRule(tc.Kubernetes, restCfg); err != nil {
		return nil, err
	}
	pods, err := rs.awaitReady(ctx, tc.ReadyTimeout)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		r, err := rs.open(&pods[i])
		if err != nil {
			return nil, exitcode.With(exitcode.Usage, err)
		}
		rs.current = append(rs.current, r)
	}
	return rs, nil
}

// endpointRule is how a pod's metrics endpoint is reached: at its IP with
// a client that follows no redirect, or through the API server's pod proxy
// with the cluster's credentials (which follow no redirect either: a
// redirect would carry them elsewhere).
func endpointRule(kc config.KubeTargetConfig, restCfg *rest.Config) (func(*corev1.Pod, int) (string, *http.Client), error) {
	if kc.ScrapeVia == config.ScrapeViaPodIP {
		client := nofollow.Client(0)
		return func(p *corev1.Pod, port int) (string, *http.Client) {
			return "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)) + kc.MetricsPath, client
		}, nil
	}
	client, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		return nil, fmt.Errorf("target.kubernetes.scrape_via api_server: cannot make a client for the API server: %w", err)
	}
	client.CheckRedirect = nofollow.CheckRedirect
	host := strings.TrimRight(restCfg.Host, "/")
	return func(p *corev1.Pod, port int) (string, *http.Client) {
		return PodProxyURL(host, p.Namespace, p.Name, port, kc.MetricsPath), client
	}, nil
}

// PodProxyURL is the API server's proxy URL of a pod's port and path
// (pods/proxy): host is the API server's base URL.
func PodProxyURL(host, namespace, pod string, port int, path string) string {
	return fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s:%d/proxy%s", host, namespace, pod, port, path)
}

// awaitReady lists the selected pods until at least min_replicas are
// running and ready, or d has passed: then it fails naming what it saw.
func (rs *replicaSet) awaitReady(ctx context.Context, d time.Duration) ([]corev1.Pod, error) {
	deadline := time.Now().Add(d)
	for {
		pods, err := rs.list(ctx)
		if err != nil {
			return nil, err
		}
		ready := readyPods(pods)
		if len(ready) >= rs.kc.MinReplicas {
			return ready, nil
		}
		if time.Now().After(deadline) {
			return nil, exitcode.With(exitcode.Usage, fmt.Errorf("target.kubernetes: %d of the %d replicas target.kubernetes.min_replicas asks for were running and ready after target.ready_timeout %s (pods %s in namespace %s: %s)",
				len(ready), rs.kc.MinReplicas, d, rs.kc.Selector, rs.kc.Namespace, describePods(pods)))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// list lists the pods the selector matches.
func (rs *replicaSet) list(ctx context.Context) ([]corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := rs.cs.CoreV1().Pods(rs.kc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: rs.kc.Selector})
	if err != nil {
		return nil, fmt.Errorf("target.kubernetes: cannot list the pods %s in namespace %s (the Role needs pods list): %w", rs.kc.Selector, rs.kc.Namespace, err)
	}
	slices.SortFunc(l.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return l.Items, nil
}

// readyPods are the pods that are running, ready and not being deleted.
func readyPods(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) && p.Status.PodIP != "" {
			out = append(out, p)
		}
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describePods says what each pod is doing, for an error: "none" when the
// selector matches no pod.
func describePods(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "the selector matches no pod"
	}
	var parts []string
	for _, p := range pods {
		s := fmt.Sprintf("%s %s", p.Name, p.Status.Phase)
		if p.DeletionTimestamp != nil {
			s += ", being deleted"
		} else if p.Status.Phase == corev1.PodRunning && !podReady(&p) {
			s += ", not ready"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// restarts is the sum of a pod's containers' restart counts.
func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// metricsPort resolves target.kubernetes.metrics_port on pod p: a number
// as it is, a name as the container port of that name.
func metricsPort(p *corev1.Pod, port string) (int, error) {
	if n, err := strconv.Atoi(port); err == nil {
		return n, nil
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == port {
				return int(cp.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("target.kubernetes.metrics_port: pod %s/%s has no container port named %q", p.Namespace, p.Name, port)
}

// cpuLimitCores is the sum of pod p's containers' CPU limits, in cores; 0
// when a container has none (the pod may then use a whole node).
func cpuLimitCores(p *corev1.Pod) float64 {
	var sum float64
	for _, c := range p.Spec.Containers {
		q, ok := c.Resources.Limits[corev1.ResourceCPU]
		if !ok || q.IsZero() {
			return 0
		}
		sum += q.AsApproximateFloat64()
	}
	return sum
}

// open opens the sampler of pod p.
func (rs *replicaSet) open(p *corev1.Pod) (*replica, error) {
	port, err := metricsPort(p, rs.kc.MetricsPort)
	if err != nil {
		return nil, err
	}
	if rs.kc.ScrapeVia == config.ScrapeViaPodIP && !rs.offLoopback && !api.IsLoopback(p.Status.PodIP) {
		return nil, fmt.Errorf("target.kubernetes.scrape_via pod_ip: pod %s/%s's IP %s is not on loopback: soakd would scrape off this machine; set target.allow_non_loopback: true", p.Namespace, p.Name, p.Status.PodIP)
	}
	url, client := rs.endpoint(p, port)
	s, err := extsample.New(context.Background(), extsample.Options{Endpoint: url, Client: client, Runtime: rs.rt,
		Interval: rs.interval, Timeout: rs.timeout, MaxSamples: 2})
	if err != nil {
		return nil, fmt.Errorf("target.kubernetes: pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return &replica{uid: p.UID, sampler: s, info: report.ReplicaInfo{
		Namespace: p.Namespace, Pod: p.Name, UID: string(p.UID), Node: p.Spec.NodeName, PodIP: p.Status.PodIP,
		MetricsURL: url, Restarts: restarts(p), CPULimitCores: cpuLimitCores(p),
	}}, nil
}

// SampleNow scrapes every current replica at once and stores their sum.
func (rs *replicaSet) SampleNow(ctx context.Context) (extsample.Sample, error) {
	rs.mu.Lock()
	cur := slices.Clone(rs.current)
	rs.mu.Unlock()
	at := time.Now()
	got := make([]extsample.Replica, len(cur))
	var wg sync.WaitGroup
	for i, r := range cur {
		wg.Go(func() {
			s, _ := r.sampler.SampleNow(ctx)
			got[i] = extsample.Replica{Name: r.name(), Sample: s}
		})
	}
	wg.Wait()
	smp := extsample.SumReplicas(at, got)
	rs.mu.Lock()
	if len(rs.ring) < rs.cap {
		rs.ring = append(rs.ring, smp)
	} else {
		rs.ring[rs.head] = smp
		rs.head = (rs.head + 1) % rs.cap
	}
	rs.mu.Unlock()
	if smp.Error != "" {
		return smp, errors.New(smp.Error)
	}
	return smp, nil
}

// Samples returns the stored samples with Time in [from, to], oldest first.
func (rs *replicaSet) Samples(from, to time.Time) []extsample.Sample {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []extsample.Sample
	for i := range rs.ring {
		s := rs.ring[(rs.head+i)%len(rs.ring)]
		if !s.Time.Before(from) && !s.Time.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// Last returns the newest sample.
func (rs *replicaSet) Last() (extsample.Sample, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.ring) == 0 {
		return extsample.Sample{}, false
	}
	return rs.ring[(rs.head+len(rs.ring)-1)%len(rs.ring)], true
}

// Run samples every interval and checks the replica set every
// replicaCheckEvery until ctx is done. A change the configuration does not
// allow is returned (the run then stops with it); an allowed one is
// recorded and the set follows it.
func (rs *replicaSet) Run(ctx context.Context) error {
	sample := time.NewTicker(rs.interval)
	defer sample.Stop()
	check := time.NewTicker(replicaCheckEvery)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sample.C:
			_, _ = rs.SampleNow(ctx)
		case <-check.C:
			pods, err := rs.list(ctx)
			if err != nil {
				if ctx.Err() == nil {
					rs.log.Warn("cannot check the replicas", zap.Error(err))
				}
				continue
			}
			if err := rs.follow(pods, time.Now()); err != nil {
				return err
			}
		}
	}
}

// follow compares the listed pods with the sampled set: each replica that
// restarted, left or joined is an event. Without allow_restarts the first
// event is returned as the error that stops the run; with it the set
// follows the pods (a restarted replica sampled under its new name, a new
// one opened, a gone one dropped).
func (rs *replicaSet) follow(pods []corev1.Pod, now time.Time) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	ready := readyPods(pods)
	byUID := map[types.UID]*corev1.Pod{}
	for i := range pods {
		byUID[pods[i].UID] = &pods[i]
	}
	var evs []report.ReplicaEvent
	var keep []*replica
	for _, r := range rs.current {
		p, ok := byUID[r.uid]
		switch {
		case !ok:
			evs = append(evs, report.ReplicaEvent{Time: now, Pod: r.info.Pod, Event: "left", Detail: "the pod is gone (deleted, or no longer matches the selector)"})
		case p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning:
			evs = append(evs, report.ReplicaEvent{Time: now, Pod: r.info.Pod, Event: "left", Detail: fmt.Sprintf("the pod is %s%s", p.Status.Phase, map[bool]string{true: ", being deleted"}[p.DeletionTimestamp != nil])})
		case restarts(p) > r.info.Restarts:
			evs = append(evs, report.ReplicaEvent{Time: now, Pod: r.info.Pod, Event: "restarted",
				Detail: fmt.Sprintf("restart count %d → %d%s", r.info.Restarts, restarts(p), lastTermination(p))})
			r.info.Restarts = restarts(p)
			keep = append(keep, r)
		default:
			keep = append(keep, r)
		}
	}
	var joined []*corev1.Pod
	for i := range ready {
		if !slices.ContainsFunc(rs.current, func(r *replica) bool { return r.uid == ready[i].UID }) {
			joined = append(joined, &ready[i])
			evs = append(evs, report.ReplicaEvent{Time: now, Pod: ready[i].Name, Event: "joined", Detail: "a new pod matches the selector, running and ready"})
		}
	}
	if len(evs) == 0 {
		return nil
	}
	rs.events = append(rs.events, evs...)
	for _, e := range evs {
		rs.log.Warn("the target's replica set changed", zap.String("pod", e.Pod), zap.String("event", e.Event), zap.String("detail", e.Detail))
	}
	if !rs.kc.AllowRestarts {
		e := evs[0]
		return fmt.Errorf("replica %s/%s %s (%s): its figures would mix two processes, so the run stops; set target.kubernetes.allow_restarts: true to keep going (the windows across a change are then not measured)",
			rs.kc.Namespace, e.Pod, e.Event, e.Detail)
	}
	for _, p := range joined {
		r, err := rs.open(p)
		if err != nil {
			rs.log.Warn("cannot sample a new replica", zap.String("pod", p.Name), zap.Error(err))
			continue
		}
		keep = append(keep, r)
	}
	slices.SortFunc(keep, func(a, b *replica) int { return strings.Compare(a.info.Pod, b.info.Pod) })
	rs.current = keep
	return nil
}

// lastTermination says how a restarted pod's container last ended.
func lastTermination(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if t := c.LastTerminationState.Terminated; t != nil {
			return fmt.Sprintf("; container %s last ended: %s, exit code %d", c.Name, cmpOr(t.Reason, "terminated"), t.ExitCode)
		}
	}
	return ""
}

// info returns the replicas sampled now and the events so far.
func (rs *replicaSet) info() ([]report.ReplicaInfo, []report.ReplicaEvent) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]report.ReplicaInfo, len(rs.current))
	for i, r := range rs.current {
		out[i] = r.info
	}
	return out, slices.Clone(rs.events)
}

// capacityCores is the CPU the replicas may use, in cores: the sum of
// their CPU limits; 0 when a replica has none.
func (rs *replicaSet) capacityCores() float64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var sum float64
	for _, r := range rs.current {
		if r.info.CPULimitCores <= 0 {
			return 0
		}
		sum += r.info.CPULimitCores
	}
	return sum
}
