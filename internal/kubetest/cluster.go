// Package kubetest runs a real Kubernetes control plane on loopback for
// tests: etcd, kube-apiserver and kube-controller-manager built from their
// sources (scripts/kube-binaries.sh, cached by version), and Agent, a small
// stand-in for the kubelet that runs the pods bound to its node as local
// processes and serves their logs where the API server fetches them.
//
// What is real: the API objects, their validation and defaulting,
// authentication by token, RBAC, admission (service accounts), the Job,
// garbage-collector and TTL controllers, pods/log through the API server.
// What is not: there is no container runtime (a pod's image names a local
// executable, AgentOptions.Images), no cgroups (resource limits are not
// enforced), no CNI (each pod gets its own loopback address, 127.0.0.N),
// no kube-scheduler (the agent binds pods to its node itself).
package kubetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Versions are the control plane's releases; scripts/kube-binaries.sh
// builds exactly these.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.7.3"
)

// BinDir is where the control plane's binaries are: $SOAKD_KUBE_BIN_DIR,
// else the cache scripts/kube-binaries.sh fills,
// ${SOAKD_KUBE_CACHE:-$HOME/.cache/soakd/kube}/<kubernetes>-etcd-<etcd>.
func BinDir() string {
	if d := os.Getenv("SOAKD_KUBE_BIN_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("SOAKD_KUBE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "soakd", "kube")
	}
	return filepath.Join(cache, KubernetesVersion+"-etcd-"+EtcdVersion)
}

// Cluster is a running control plane. Everything it started is stopped
// and awaited in the test's cleanup.
type Cluster struct {
	// URL is the API server's address (https on 127.0.0.1).
	URL   string
	token string
	dir   string
	procs []*proc
}

// Start runs etcd, kube-apiserver and kube-controller-manager for t and
// waits until the API server is ready. Without the binaries it skips t,
// naming the command that builds them, unless SOAKD_KUBE_E2E=1 (CI), where
// their absence fails t.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin := BinDir()
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			msg := fmt.Sprintf("no %s in %s: build the test control plane with `make kube-binaries` (scripts/kube-binaries.sh)", name, bin)
			if os.Getenv("SOAKD_KUBE_E2E") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	c := &Cluster{dir: t.TempDir(), token: randomHex(t, 16)}
	t.Cleanup(func() { c.stop(t) })
	ctx := t.Context()

	etcdClient, etcdPeer := freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + etcdClient
	c.run(t, bin, "etcd", "--name=kubetest", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls=http://127.0.0.1:"+etcdPeer, "--initial-advertise-peer-urls=http://127.0.0.1:"+etcdPeer,
		"--initial-cluster=kubetest=http://127.0.0.1:"+etcdPeer, "--log-level=warn")
	if err := waitFor(ctx, 60*time.Second, func() error { return httpOK(etcdURL + "/health") }); err != nil {
		c.fatal(t, "etcd did not become healthy: %v", err)
	}

	saKey := filepath.Join(c.dir, "sa.key")
	writeRSAKey(t, saKey)
	tokens := filepath.Join(c.dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(c.token+`,kubetest-admin,kubetest-admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	c.URL = "https://127.0.0.1:" + port
	c.run(t, bin, "kube-apiserver", "--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+port,
		"--cert-dir="+filepath.Join(c.dir, "apiserver-certs"),
		"--token-auth-file="+tokens, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+saKey,
		"--service-account-signing-key-file="+saKey, "--api-audiences=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.96.0.0/24", "--endpoint-reconciler-type=none",
		"--kubelet-preferred-address-types=InternalIP", "--enable-priority-and-fairness=false",
		"--profiling=false", "-v=1")
	cs := c.Clientset(t, c.AdminConfig())
	if err := waitFor(ctx, 120*time.Second, func() error {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%w: %s", err, body)
		}
		return nil
	}); err != nil {
		c.fatal(t, "kube-apiserver did not become ready: %v", err)
	}

	kubeconfig := c.Kubeconfig(t, c.AdminConfig())
	c.run(t, bin, "kube-controller-manager", "--kubeconfig="+kubeconfig,
		"--controllers=job,serviceaccount-token,serviceaccount,garbagecollector,ttl-after-finished",
		"--service-account-private-key-file="+saKey, "--use-service-account-credentials=false",
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0", "--concurrent-job-syncs=5", "-v=1")
	// The controllers are ready once the service-account controller made
	// the default namespace's account.
	if err := waitFor(ctx, 120*time.Second, func() error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		c.fatal(t, "kube-controller-manager did not start its controllers: %v", err)
	}
	return c
}

// AdminConfig is a client config of a user in system:masters.
func (c *Cluster) AdminConfig() *rest.Config {
	return &rest.Config{Host: c.URL, BearerToken: c.token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 200, Burst: 400}
}

// Clientset is a clientset for cfg.
func (c *Cluster) Clientset(t testing.TB, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Kubeconfig writes a kubeconfig file for cfg (its host and bearer token)
// and returns its path, for a soakd process to use.
func (c *Cluster) Kubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: cfg.Host, InsecureSkipTLSVerify: true}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "user", Namespace: "default"}
	kc.CurrentContext = "kubetest"
	f, err := os.CreateTemp(c.dir, "kubeconfig-*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := clientcmd.WriteToFile(*kc, f.Name()); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// proc is a control-plane process and its log.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (c *Cluster) run(t testing.TB, bin, name string, args ...string) {
	t.Helper()
	logPath := filepath.Join(c.dir, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("cannot start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_ = cmd.Wait()
		out.Close()
	}()
	c.procs = append(c.procs, p)
}

// stop stops the processes in reverse order, SIGTERM then (after 10 s)
// SIGKILL, and awaits each; a failed test gets the tail of their logs.
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
		for _, p := range c.procs {
			t.Logf("%s log (tail):\n%s", p.name, tail(p.log, 3000))
		}
	}
}

func (c *Cluster) fatal(t testing.TB, format string, args ...any) {
	t.Helper()
	for _, p := range c.procs {
		t.Logf("%s log (tail):\n%s", p.name, tail(p.log, 3000))
	}
	t.Fatalf(format, args...)
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitFor retries f every 100 ms until it succeeds or d has passed.
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

func httpOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// freePort is a TCP port free on 127.0.0.1 now.
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
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeRSAKey(t testing.TB, path string) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = pem.Encode(&b, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}
