package kubetest

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestControlPlaneServesBatch(t *testing.T) {
	c := Start(t)
	cs := c.Clientset(t, c.AdminConfig())
	jobs, err := cs.BatchV1().Jobs("default").List(t.Context(), metav1.ListOptions{})
	if err != nil || len(jobs.Items) != 0 {
		t.Fatalf("jobs %v %v", jobs, err)
	}
}
