package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/brokerctl"
	"github.com/openstack/magnum-conductor/test/harness"
)

// TestBrokerRestart: the conductor binary rides through `rabbitmqctl
// stop_app`/`start_app` without a restart of its own: it answers
// ping_conductor again, and a cluster_create after the restart (magnumctl
// calls it: the reply crosses the restarted broker too) runs to
// CREATE_COMPLETE with its notifications sent.
func TestBrokerRestart(t *testing.T) {
	brokerctl.SkipUnlessEnabled(t)
	dir := t.TempDir()
	topic := dbtest.RandomName("e2e_restart_notifications_")
	conf := (&harness.Config{SimDelay: 0, NotificationTopic: topic}).Write(t, dir)
	t.Cleanup(func() {
		_, _ = testkit.CombinedOutput(testkit.ToolTimeout, "rabbitmqctl", "-q", "delete_queue", topic+".info")
	})
	p := harness.Start(t, bins, conf)
	if _, err := harness.CTL(bins, conf, "template", "create", "--name", "dev", "--os", "simulated",
		"--image", "img", "--flavor", "m1.small", "--master-flavor", "m1.medium", "--driver", "simulated"); err != nil {
		t.Fatal(err)
	}
	create := func(name string) {
		t.Helper()
		out, err := harness.CTL(bins, conf, "cluster", "create", "--name", name, "--template", "dev",
			"--node-count", "1", "--wait")
		if err != nil {
			t.Fatalf("create %s: %v\n%s", name, err, out)
		}
		if !regexp.MustCompile(`CREATE_COMPLETE`).MatchString(out) {
			t.Fatalf("create %s did not complete:\n%s", name, out)
		}
	}
	create("before")

	brokerctl.Restart(t)

	// Paced at a second: each check runs magnumctl against the conductor.
	answered, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := testkit.Await(answered, time.Second, "the conductor answering a ping within 90 s of the broker restart", func() (bool, string) {
		out, err := harness.CTL(bins, conf, "--timeout", "5s", "conductor", "ping")
		return err == nil && strings.Contains(out, "true"), fmt.Sprintf("ping: %v %s", err, out)
	}); err != nil {
		t.Fatal(err)
	}
	create("after")
	out, err := harness.CTL(bins, conf, "cluster", "list")
	if err != nil || !strings.Contains(out, "before") || !strings.Contains(out, "after") {
		t.Fatalf("cluster list: %v\n%s", err, out)
	}
	// The create after the restart notified on the redeclared <topic>.info
	// queue: the transient queue, and what it held before, went with the
	// broker, so whatever it holds now was sent after the restart.
	notified, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	if err := testkit.Await(notified, 500*time.Millisecond, "a cluster_create notification on "+topic+".info after the restart", func() (bool, string) {
		out, err := testkit.Output(testkit.ToolTimeout, "rabbitmqctl", "-q", "--no-table-headers", "list_queues", "name", "messages")
		if err != nil {
			t.Fatal(err)
		}
		if n := queueMessages(string(out), topic+".info"); n >= 1 {
			t.Logf("%d notifications on %s.info after the restart", n, topic)
			return true, ""
		}
		return false, string(out)
	}); err != nil {
		t.Fatalf("%v\nconductor log:\n%s", err, p.Log())
	}
}

// queueMessages is the message count of queue in rabbitmqctl list_queues
// name messages output (-1 when the queue is not there).
func queueMessages(out, queue string) int {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == queue {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}
