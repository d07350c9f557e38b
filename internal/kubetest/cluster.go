// Package kubetest runs a real Kubernetes control plane on loopback for
// tests: etcd, kube-apiserver and kube-controller-manager built from their
// sources (scripts/kube-binaries.sh, cached by version), and Agent, a small
// stand-in for the kubelet that registers a Node, binds pods to it (there is
// no kube-scheduler), runs their containers as local processes and serves
// their logs where the API server fetches them for pods/log.
//
// What is real: the API objects, their validation and defaulting, token
// authentication, RBAC, admission (service accounts), the Job, Deployment,
// ReplicaSet, garbage-collector and TTL controllers, the TokenRequest API,
// pods/log through the API server (which verifies the agent's certificate).
// What is not: there is no container runtime (an image names a local
// executable, AgentOptions.Images), no cgroups (resource requests and
// limits are not enforced), no CNI and no kube-proxy (each pod gets its own
// loopback address, 127.0.0.N; Service IPs route nowhere), no scheduler
// (AgentOptions.Unschedulable stands in for "no node fits").
//
// A test starts a cluster with Start, which skips the test when the
// binaries are not built (`make kube-binaries`) unless SOAKD_KUBE_E2E=1:
//
//	c := kubetest.Start(t, kubetest.Options{Agent: &kubetest.AgentOptions{
//		Images: map[string]string{"soakd": soakdBinary}, // image → local executable
//	}})
//	if err := c.Apply(ctx, manifests); err != nil { … }   // Namespace, ServiceAccount, Role, …
//	cfg, err := c.ServiceAccountConfig(ctx, "soak", "driver") // that account's RBAC
//	kubeconfig := c.Kubeconfig(t, cfg)                        // for soakd --kubeconfig
//	c.Agent.Kill("soak", pod, "OOMKilled")                    // a fault mid-run
//
// Everything Start and StartAgent start is stopped and awaited in the
// test's cleanup; a failed test's log shows the tail of the control
// plane's logs and of every pod's output.
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Versions are the control plane's releases; scripts/kube-binaries.sh
// builds exactly these (TestKubeVersionsMatchTheBuild checks it against
// scripts/kubebuild's go.mod files).
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.7.3"
)

// DefaultControllers are the kube-controller-manager controllers Start
// runs (their 1.37 names): Jobs and their pods, service accounts and
// their tokens, Deployments (through ReplicaSets) for targets, and the
// garbage collector and TTL controller that clean a finished Job up.
var DefaultControllers = []string{
	"job-controller", "serviceaccount-controller", "serviceaccount-token-controller",
	"deployment-controller", "replicaset-controller",
	"garbage-collector-controller", "ttl-after-finished-controller",
}

// Options configure Start.
type Options struct {
	// Agent, when not nil, starts a node agent with these options
	// (Cluster.Agent); without it, pods stay Pending until the test calls
	// StartAgent.
	Agent *AgentOptions
	// Controllers replaces DefaultControllers (kube-controller-manager's
	// --controllers).
	Controllers []string
}

// BinDir is where the control plane's binaries are: $SOAKD_KUBE_BIN_DIR,
// else the cache scripts/kube-binaries.sh fills,
// ${SOAKD_KUBE_CACHE:-$HOME/.cache/soakd/kube}/<kubernetes>-etcd-<etcd>.
func BinDir() string {
	if d := os.Getenv("SOAKD_KUBE_BIN_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("SOAKD_KUBE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		cache = filepath.Join(home, ".cache", "soakd", "kube")
	}
	return filepath.Join(cache, KubernetesVersion+"-etcd-"+EtcdVersion)
}

// Cluster is a running control plane. Everything it started is stopped
// and awaited in the test's cleanup.
type Cluster struct {
	// URL is the API server's address, https://127.0.0.1:<port>.
	URL string
	// Agent is the node agent Options.Agent asked for, else nil.
	Agent *Agent

	ca    *authority
	token string // the admin's bearer token (system:masters)
	dir   string
	procs []*proc
}

// Start runs etcd, kube-apiserver and kube-controller-manager for t, on
// 127.0.0.1 and free ports, and returns once the API server is ready and
// the controllers run. Without the binaries it skips t, naming the command
// that builds them, unless SOAKD_KUBE_E2E=1 (CI), where it fails t.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	bin := BinDir()
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			msg := fmt.Sprintf("kubetest: no %s in %s: build the test control plane with `make kube-binaries` (bash scripts/kube-binaries.sh, about 13 min once)", name, bin)
			if os.Getenv("SOAKD_KUBE_E2E") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	ca, err := newAuthority()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{ca: ca, dir: t.TempDir(), token: randomHex(t, 16)}
	t.Cleanup(func() { c.stop(t) })
	ctx := t.Context()

	etcdClient, etcdPeer := freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + etcdClient
	c.run(t, bin, "etcd", "--name=kubetest", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls=http://127.0.0.1:"+etcdPeer, "--initial-advertise-peer-urls=http://127.0.0.1:"+etcdPeer,
		"--initial-cluster=kubetest=http://127.0.0.1:"+etcdPeer, "--log-level=warn")
	if err := waitFor(ctx, 60*time.Second, func() error { return httpOK(ctx, etcdURL+"/health") }); err != nil {
		c.fatal(t, "etcd did not become healthy: %v", err)
	}

	saKey, err := serviceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	servingCert, servingKey, err := ca.serving("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"sa.key": saKey, "ca.crt": ca.certPEM, "apiserver.crt": servingCert, "apiserver.key": servingKey,
		// A static token file: the admin is in system:masters, which RBAC
		// lets do anything, as kubeadm's admin.conf.
		"tokens.csv": []byte(c.token + `,kubetest-admin,kubetest-admin,"system:masters"` + "\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(c.dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := func(name string) string { return filepath.Join(c.dir, name) }
	port := freePort(t)
	c.URL = "https://127.0.0.1:" + port
	c.run(t, bin, "kube-apiserver", "--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+port,
		"--tls-cert-file="+path("apiserver.crt"), "--tls-private-key-file="+path("apiserver.key"),
		"--token-auth-file="+path("tokens.csv"), "--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+path("sa.key"),
		"--service-account-signing-key-file="+path("sa.key"), "--api-audiences=https://kubernetes.default.svc",
		// No Service IP is ever routed (no kube-proxy); the range only has
		// to be valid. No endpoint reconciler: it would publish
		// 127.0.0.1 as the kubernetes Service's endpoint and fight nothing.
		"--service-cluster-ip-range=10.96.0.0/24", "--endpoint-reconciler-type=none",
		// pods/log dials the node's InternalIP (127.0.0.1) and verifies
		// the agent's certificate with the cluster CA.
		"--kubelet-preferred-address-types=InternalIP", "--kubelet-certificate-authority="+path("ca.crt"),
		"--enable-priority-and-fairness=false", "--profiling=false", "-v=1")
	cs, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, 120*time.Second, func() error {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("/readyz: %w: %s", err, body)
		}
		return nil
	}); err != nil {
		c.fatal(t, "kube-apiserver did not become ready: %v", err)
	}

	controllers := opts.Controllers
	if controllers == nil {
		controllers = DefaultControllers
	}
	c.run(t, bin, "kube-controller-manager", "--kubeconfig="+c.Kubeconfig(t, c.AdminConfig()),
		"--controllers="+strings.Join(controllers, ","),
		"--service-account-private-key-file="+path("sa.key"), "--root-ca-file="+path("ca.crt"),
		// The controllers act with the admin's token: one identity fewer
		// to set up, and RBAC is tested on the test's own accounts.
		"--use-service-account-credentials=false",
		"--leader-elect=false", "--secure-port=0", "--concurrent-job-syncs=5", "-v=1")
	// The controllers run once the service-account controller has made
	// the default namespace's account (with the default controllers).
	if err := waitFor(ctx, 120*time.Second, func() error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		c.fatal(t, "kube-controller-manager did not start its controllers: %v", err)
	}
	if opts.Agent != nil {
		c.Agent = c.StartAgent(t, *opts.Agent)
	}
	return c
}

// AdminConfig is a client config of the admin (a user in system:masters,
// by bearer token) that verifies the API server's certificate.
func (c *Cluster) AdminConfig() *rest.Config {
	return c.config(c.token)
}

// config is a client config with token; QPS is raised from client-go's 5
// so that polling tests are not throttled.
func (c *Cluster) config(token string) *rest.Config {
	return &rest.Config{Host: c.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: c.ca.certPEM}, QPS: 200, Burst: 400}
}

// Clientset is a clientset for cfg; t fails if cfg is unusable.
func (c *Cluster) Clientset(t testing.TB, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// ServiceAccountConfig is a client config acting as service account
// namespace/name, with a token from the TokenRequest API (valid 2 hours),
// so that a test runs under that account's RBAC and not as the admin.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		return nil, err
	}
	seconds := int64(2 * 3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for service account %s/%s: %w", namespace, name, err)
	}
	return c.config(tr.Status.Token), nil
}

// Kubeconfig writes a kubeconfig file for cfg (its host, the cluster CA
// and cfg's bearer token; namespace "default") and returns its path, for a
// process to use with --kubeconfig or KUBECONFIG.
func (c *Cluster) Kubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: c.ca.certPEM}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "user", Namespace: "default"}
	kc.CurrentContext = "kubetest"
	f, err := os.CreateTemp(c.dir, "kubeconfig-*")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*kc, f.Name()); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// proc is a control-plane process and its log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once the process is awaited
}

// run starts bin/name with args in its own process group, its output in
// c.dir/<name>.log.
func (c *Cluster) run(t testing.TB, bin, name string, args ...string) {
	t.Helper()
	logPath := filepath.Join(c.dir, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Pdeathsig: a test binary killed by its timeout takes the control
	// plane with it instead of leaving it on the shared machine.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		t.Fatalf("kubetest: cannot start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_ = cmd.Wait()
		_ = out.Close()
	}()
	c.procs = append(c.procs, p)
}

// stop stops the processes in reverse order (controller manager, API
// server, etcd), SIGTERM then, after 10 s, SIGKILL to the group, and
// awaits each; a failed test gets the tail of their logs.
func (c *Cluster) stop(t testing.TB) {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	if t.Failed() {
		c.logTails(t)
	}
}

func (c *Cluster) fatal(t testing.TB, format string, args ...any) {
	t.Helper()
	c.logTails(t)
	t.Fatalf(format, args...)
}

func (c *Cluster) logTails(t testing.TB) {
	for _, p := range c.procs {
		t.Logf("%s log (%s, tail):\n%s", p.name, p.log, tail(p.log, 4000))
	}
}

// tail is the last n bytes of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitFor retries f every 100 ms until it succeeds, ctx ends or d has
// passed, and then returns f's last error.
func waitFor(ctx context.Context, d time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %s: %w", d, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// httpOK GETs url and wants 200.
func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// freePort is a TCP port free on 127.0.0.1 now: etcd and kube-apiserver
// cannot report a port they chose themselves.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// agentTLS is the agent's serving configuration, signed by the cluster CA.
func (c *Cluster) agentTLS() (*tls.Config, error) {
	cert, err := c.ca.servingTLS("kubetest-node")
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
