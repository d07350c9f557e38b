package kubetest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NodeName is the agent's Node; one agent runs per cluster.
const NodeName = "kubetest-node"

// UnschedulableMessage is the message of the PodScheduled=False condition
// the agent sets on a pod AgentOptions.Unschedulable rejects, worded as
// kube-scheduler words it when no node has room.
const UnschedulableMessage = "0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."

// AgentOptions configure an Agent.
type AgentOptions struct {
	// Images maps a container image to the local executable standing in
	// for it. An image is looked up as written ("ghcr.io/x/soakd:v1"),
	// then without its tag or digest ("ghcr.io/x/soakd"), then by its last
	// path element ("soakd"). A pod whose image is not here stays Pending
	// with the container waiting, reason ErrImagePull, as an image that
	// cannot be pulled would leave it.
	//
	// The command rule: a container without command runs the executable
	// with the container's args (the image's entrypoint). A container
	// with a command whose first element has the executable's base name
	// ("/usr/local/bin/soakd" or "soakd" for an executable .../soakd,
	// "/bin/sh" or "sh" for /bin/sh) runs the executable with the rest of
	// the command and then the args. Any other command is an error
	// (CreateContainerError): the agent runs only the executables given
	// here, never a host program a manifest names.
	Images map[string]string
	// Unschedulable, when it returns true for a pod, leaves the pod
	// Pending, unbound, with the condition PodScheduled=False, reason
	// Unschedulable and UnschedulableMessage, as kube-scheduler does when
	// no node fits. Nil: every pod is bound to the agent's node.
	Unschedulable func(*corev1.Pod) bool
	// Env is added ("NAME=value") to every container's environment
	// before the pod's own (which overrides it), e.g. GOCOVERDIR. The
	// host's environment is not inherited, except PATH.
	Env []string
	// RestartDelay is how long a container that exited waits before its
	// restart (restartPolicy Always or OnFailure), its status waiting,
	// reason CrashLoopBackOff, meanwhile. The kubelet waits 10 s and
	// doubles it; 0 means 1 s, short enough for a test to see a restart.
	RestartDelay time.Duration
}

// Agent is the test node, the kubelet's stand-in: it registers the Node
// NodeName (Ready, InternalIP 127.0.0.1, its log port as the kubelet
// endpoint), binds every pending pod to it (it is the scheduler too), runs
// each container of a bound pod as a local process in a process group of
// its own, reports the pod's status as the kubelet does (Pending, Running,
// Succeeded or Failed, with container states, exit codes, reasons and
// restart counts), stops a deleted pod's processes (SIGTERM, the grace
// period, SIGKILL) and then deletes the pod object, and serves each
// container's output on the kubelet's /containerLogs endpoint over TLS,
// where the API server's pods/log reads it.
//
// Each pod gets its own loopback address, 127.0.0.N with N from 2 up (never
// reused), as status.podIP; the pod sees it through the downward API
// (fieldRef status.podIP), so replicas can listen on one port each on its
// own address. The agent runs no container runtime: no image, no
// filesystem isolation, no cgroups (requests and limits are not enforced),
// no probes (a running container is ready), no init containers.
type Agent struct {
	cs      kubernetes.Interface
	opts    AgentOptions
	dir     string
	port    int
	apiHost string // the API server's host and port, given to pods as
	apiPort string // KUBERNETES_SERVICE_HOST and _PORT

	srv    *http.Server
	cancel context.CancelFunc
	loops  sync.WaitGroup // the reconcile loop and the heartbeat
	procs  sync.WaitGroup // every process's waiter and log readers
	served sync.WaitGroup // the log server

	mu     sync.Mutex
	pods   map[string]*podRun // by namespace/name
	nextIP uint32             // the next pod address, 127.0.0.0 + nextIP
}

// StartAgent registers the node and starts the agent on c; it is stopped
// in t's cleanup (its loops ended, every process it started killed and
// awaited, the log server closed). One agent runs per cluster.
func (c *Cluster) StartAgent(t testing.TB, opts AgentOptions) *Agent {
	t.Helper()
	if opts.RestartDelay == 0 {
		opts.RestartDelay = time.Second
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{
		cs: c.Clientset(t, c.AdminConfig()), opts: opts, dir: t.TempDir(),
		apiHost: u.Hostname(), apiPort: u.Port(),
		pods: map[string]*podRun{}, nextIP: 2,
	}
	tlsCfg, err := c.agentTLS()
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	a.port = l.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", a.serveLogs)
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	a.served.Go(func() { _ = a.srv.Serve(l) })
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	t.Cleanup(func() { a.stop(t) })
	if err := a.register(t.Context()); err != nil {
		t.Fatal(err)
	}
	a.loops.Go(func() { a.loop(ctx) })
	a.loops.Go(func() { a.heartbeat(ctx) })
	return a
}

// stop ends the loops first (so nothing starts a process any more), then
// kills every process group and awaits them, then closes the log server
// (ending open follow streams).
func (a *Agent) stop(t testing.TB) {
	a.cancel()
	a.loops.Wait()
	a.mu.Lock()
	for _, run := range a.pods {
		run.killAll("")
	}
	a.mu.Unlock()
	a.procs.Wait()
	_ = a.srv.Close()
	a.served.Wait()
	if t.Failed() {
		a.mu.Lock()
		defer a.mu.Unlock()
		for key, run := range a.pods {
			for _, cr := range run.containers {
				t.Logf("pod %s container %s (ip %s, restarts %d), last output:\n%s", key, cr.spec.Name, run.ip, cr.restarts, cr.logs.tail(20))
			}
		}
	}
}

// register creates the Node with its status.
func (a *Agent) register(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName, Labels: map[string]string{
		"kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux",
	}}}
	n, err := a.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("kubetest agent: cannot register node %s: %w", NodeName, err)
	}
	n.Status = a.nodeStatus(metav1.Now())
	if _, err := a.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("kubetest agent: cannot set node %s's status: %w", NodeName, err)
	}
	return nil
}

// nodeStatus is the node's status at now: Ready, its address and log
// port, and a capacity (64 CPUs, 64 GiB, 110 pods) larger than any test
// asks for, since nothing is enforced.
func (a *Agent) nodeStatus(now metav1.Time) corev1.NodeStatus {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
	return corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubetest agent is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: NodeName}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(a.port)}},
		NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: KubernetesVersion, OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "kubetest://local-process"},
	}
}

// heartbeat refreshes the Ready condition's heartbeat every 10 s, as the
// kubelet's status updates do (no node-lifecycle controller runs, so a
// stale one would mark nothing, but a reader of the Node sees it fresh).
func (a *Agent) heartbeat(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Second):
		}
		n, err := a.cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			continue
		}
		now := metav1.Now()
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].LastHeartbeatTime = now
			}
		}
		_, _ = a.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	}
}

// loop reconciles every pod every 100 ms until ctx ends: polling keeps
// the agent simple, and a tenth of a second is well inside the seconds a
// test allows for a status to show.
func (a *Agent) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		pods, err := a.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for i := range pods.Items {
			p := &pods.Items[i]
			seen[p.Namespace+"/"+p.Name] = true
			a.reconcile(ctx, p)
		}
		a.forget(seen)
	}
}

// forget kills the processes of pods that are gone from the API (a
// forced deletion, or one this agent finished) and drops them.
func (a *Agent) forget(seen map[string]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, run := range a.pods {
		if !seen[key] {
			run.killAll("")
			delete(a.pods, key)
		}
	}
}

func (a *Agent) reconcile(ctx context.Context, p *corev1.Pod) {
	key := p.Namespace + "/" + p.Name
	a.mu.Lock()
	run := a.pods[key]
	if run != nil && run.uid != p.UID {
		run.killAll("") // a new pod of the same name: the old one is gone
		delete(a.pods, key)
		run = nil
	}
	a.mu.Unlock()
	switch {
	case p.Spec.NodeName == "" && p.DeletionTimestamp == nil:
		a.schedule(ctx, p)
	case p.Spec.NodeName != NodeName:
	case p.DeletionTimestamp != nil:
		a.terminate(ctx, p, run)
	case run == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed):
		// Finished before this agent knew it: nothing to run.
	case run == nil:
		a.mu.Lock()
		run = a.newRun(p)
		a.pods[key] = run
		a.mu.Unlock()
		a.sync(ctx, p, run)
	default:
		a.sync(ctx, p, run)
	}
}

// schedule binds p to the node through the Binding subresource, as
// kube-scheduler does, or marks it unschedulable once.
func (a *Agent) schedule(ctx context.Context, p *corev1.Pod) {
	if a.opts.Unschedulable != nil && a.opts.Unschedulable(p) {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return
			}
		}
		p = p.DeepCopy()
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: UnschedulableMessage, LastTransitionTime: metav1.Now()})
		_, _ = a.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: NodeName}}
	_ = a.cs.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
}

// Kill kills every running container of pod namespace/name at once
// (SIGKILL to its process group), to be reported terminated with exit code
// 137 and reason: "OOMKilled" as the kernel's OOM killer would, "Error"
// for a crash. The pod's restartPolicy then applies as to any exit.
func (a *Agent) Kill(namespace, name, reason string) error {
	if reason == "" {
		return fmt.Errorf("kubetest: Kill %s/%s: no reason (OOMKilled, Error)", namespace, name)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	run := a.pods[namespace+"/"+name]
	if run == nil || !run.killAll(reason) {
		return fmt.Errorf("kubetest: Kill %s/%s: no container of it is running on the agent", namespace, name)
	}
	return nil
}

// Evict evicts pod namespace/name as the kubelet does under node pressure:
// its processes are killed and it is reported Failed, reason Evicted, with
// the DisruptionTarget condition; it is not restarted, whatever its
// restartPolicy.
func (a *Agent) Evict(namespace, name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	run := a.pods[namespace+"/"+name]
	if run == nil {
		return fmt.Errorf("kubetest: Evict %s/%s: the pod is not on the agent", namespace, name)
	}
	run.evicted = true
	run.killAll("Error")
	return nil
}

// DropLogStreams closes every follow stream of pod namespace/name's logs
// open now, each between two lines (never inside one), as a dropped
// connection would end it; streams opened later are not affected. The
// lines stay: a new request (from the start, or sinceTime) reads them.
func (a *Agent) DropLogStreams(namespace, name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	run := a.pods[namespace+"/"+name]
	if run == nil {
		return fmt.Errorf("kubetest: DropLogStreams %s/%s: the pod is not on the agent", namespace, name)
	}
	for _, cr := range run.containers {
		cr.logs.drop()
	}
	return nil
}

// Process is the pid of the process of pod namespace/name's first
// container while it runs.
func (a *Agent) Process(namespace, name string) (pid int, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	run := a.pods[namespace+"/"+name]
	if run == nil || len(run.containers) == 0 || !run.containers[0].running() {
		return 0, false
	}
	return run.containers[0].cur.cmd.Process.Pid, true
}

// PodIP is the loopback address the agent gave pod namespace/name.
func (a *Agent) PodIP(namespace, name string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	run := a.pods[namespace+"/"+name]
	if run == nil {
		return "", false
	}
	return run.ip, true
}

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }

// hostPath is the host's PATH, the one variable a container inherits (so
// that a shell finds its tools).
func hostPath() string {
	if p := os.Getenv("PATH"); p != "" {
		return p
	}
	return "/usr/local/bin:/usr/bin:/bin"
}
