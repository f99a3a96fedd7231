package conductor

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/db"
)

// CADF actions and outcomes (pycadf cadftaxonomy) used by Magnum.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"

	OutcomePending = "pending"
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
)

// Notification priorities (oslo.messaging).
const (
	PriorityInfo  = "INFO"
	PriorityError = "ERROR"
)

const (
	cadfEventTypeURI  = "http://schemas.dmtf.org/cloud/audit/1.0/event"
	cadfActivity      = "activity"
	clusterTypeURI    = "service/magnum/cluster"
	accountUserURI    = "service/security/account/user"
	cadfTimeFormat    = "2006-01-02T15:04:05.000000-0700"
	contentTimeFormat = "2006-01-02T15:04:05.000000"
)

// Notifications builds and sends the CADF events of cluster operations
// (magnum.conductor.utils.notify_about_cluster_operation).
type Notifications struct {
	notifier Notifier
	ngs      NodeGroupLister
	ns       *uuid.UUID
	log      *slog.Logger
	now      func() time.Time
}

// NewNotifications returns the event builder. notifier may be nil when
// notifications are disabled ([oslo_messaging_notifications] driver unset).
// auditNamespace is [audit] namespace ("openstack" by default; "" makes
// the ids plain UUID4s, as pycadf does). ngs supplies the nodegroups the
// node/master counts and addresses are computed from.
func NewNotifications(notifier Notifier, ngs NodeGroupLister, auditNamespace string, log *slog.Logger) *Notifications {
	n := &Notifications{notifier: notifier, ngs: ngs, log: log, now: time.Now}
	if auditNamespace != "" {
		sum := sha256.Sum256([]byte(auditNamespace))
		var ns uuid.UUID
		// uuid.UUID(sha256(ns).hexdigest()[:32]): the first 16 bytes.
		copy(ns[:], sum[:16])
		n.ns = &ns
	}
	return n
}

// CADF event, field order as pycadf Event.as_dict() writes it.
type cadfEvent struct {
	TypeURI   string        `json:"typeURI"`
	EventType string        `json:"eventType"`
	ID        string        `json:"id"`
	EventTime string        `json:"eventTime"`
	Action    string        `json:"action"`
	Outcome   string        `json:"outcome"`
	Observer  cadfResource  `json:"observer"`
	Initiator cadfInitiator `json:"initiator"`
	Target    cadfTarget    `json:"target"`
}

type cadfResource struct {
	ID      string `json:"id"`
	TypeURI string `json:"typeURI"`
}

type cadfInitiator struct {
	ID        string `json:"id"`
	TypeURI   string `json:"typeURI"`
	UserID    string `json:"user_id,omitempty"`
	ProjectID string `json:"project_id,omitempty"`
	DomainID  string `json:"domain_id,omitempty"`
}

type cadfTarget struct {
	ID          string           `json:"id"`
	TypeURI     string           `json:"typeURI"`
	Name        *string          `json:"name,omitempty"`
	Attachments []cadfAttachment `json:"attachments,omitempty"`
}

type cadfAttachment struct {
	TypeURI string             `json:"typeURI"`
	Content clusterDataContent `json:"content"`
	Name    string             `json:"name"`
}

// clusterDataContent is the "cluster_data" attachment, key order and the
// "docker_volume_size:" typo as Magnum sends it.
type clusterDataContent struct {
	Status            *string           `json:"status"`
	StatusReason      *string           `json:"status_reason"`
	ProjectID         *string           `json:"project_id"`
	CreatedAt         *string           `json:"created_at"`
	UpdatedAt         *string           `json:"updated_at"`
	ClusterTemplateID *string           `json:"cluster_template_id"`
	Keypair           *string           `json:"keypair"`
	DockerVolumeSize  *int64            `json:"docker_volume_size:"`
	Labels            map[string]string `json:"labels"`
	MasterFlavorID    *string           `json:"master_flavor_id"`
	FlavorID          *string           `json:"flavor_id"`
	StackID           *string           `json:"stack_id"`
	HealthStatus      *string           `json:"health_status"`
	CreateTimeout     *int64            `json:"create_timeout"`
	APIAddress        *string           `json:"api_address"`
	DiscoveryURL      *string           `json:"discovery_url"`
	NodeAddresses     []string          `json:"node_addresses"`
	MasterAddresses   []string          `json:"master_addresses"`
	NodeCount         int64             `json:"node_count"`
	MasterCount       int64             `json:"master_count"`
}

// id returns a CADF identifier: uuid5(AUDIT_NS, str(uuid4())).
func (n *Notifications) id() string {
	u := uuid.New()
	if n.ns == nil {
		return u.String()
	}
	return uuid.NewSHA1(*n.ns, []byte(u.String())).String()
}

func enumPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(contentTimeFormat)
	return &s
}

// Payload builds the CADF event for action/outcome on c as pycadf's
// Event.as_dict() does. The nodegroups give node_count, master_count and
// the addresses (Cluster.node_count and friends are derived properties).
func (n *Notifications) Payload(ctx context.Context, action, outcome string, c *objects.Cluster, ngs []*objects.NodeGroup) any {
	rc := request.From(ctx)
	ev := cadfEvent{
		TypeURI: cadfEventTypeURI, EventType: cadfActivity, ID: n.id(),
		EventTime: n.now().UTC().Format(cadfTimeFormat), Action: action, Outcome: outcome,
		Observer: cadfResource{ID: n.id(), TypeURI: clusterTypeURI},
		Initiator: cadfInitiator{ID: n.id(), TypeURI: accountUserURI,
			UserID: rc.UserID, ProjectID: rc.ProjectID, DomainID: rc.DomainID},
	}
	if c == nil {
		ev.Target = cadfTarget{ID: n.id(), TypeURI: clusterTypeURI}
		return ev
	}
	content := clusterDataContent{
		Status: enumPtr(c.Status), StatusReason: c.StatusReason, ProjectID: c.ProjectID,
		CreatedAt: timePtr(c.CreatedAt), UpdatedAt: timePtr(c.UpdatedAt),
		ClusterTemplateID: c.ClusterTemplateID, Keypair: c.Keypair, DockerVolumeSize: c.DockerVolumeSize,
		Labels: c.Labels, MasterFlavorID: c.MasterFlavorID, FlavorID: c.FlavorID, StackID: c.StackID,
		HealthStatus: enumPtr(c.HealthStatus), CreateTimeout: c.CreateTimeout, APIAddress: c.APIAddress,
		DiscoveryURL:  c.DiscoveryURL,
		NodeAddresses: []string{}, MasterAddresses: []string{},
	}
	for _, ng := range ngs {
		if ng.Role == objects.RoleMaster {
			content.MasterAddresses = append(content.MasterAddresses, ng.NodeAddresses...)
			content.MasterCount += ng.NodeCount
		} else {
			content.NodeAddresses = append(content.NodeAddresses, ng.NodeAddresses...)
			content.NodeCount += ng.NodeCount
		}
	}
	targetID := objects.Deref(c.UUID)
	if targetID == "" {
		targetID = n.id()
	}
	ev.Target = cadfTarget{ID: targetID, TypeURI: clusterTypeURI, Name: c.Name,
		Attachments: []cadfAttachment{{TypeURI: clusterTypeURI, Content: content, Name: "cluster_data"}}}
	return ev
}

// ClusterEvent sends magnum.cluster.<action> with outcome about c: ERROR for
// a failure, INFO otherwise. Failures to send are logged, never returned
// (a notification never decides an operation's result).
func (n *Notifications) ClusterEvent(ctx context.Context, action, outcome string, c *objects.Cluster) {
	if n.notifier == nil {
		return
	}
	var ngs []*objects.NodeGroup
	if c != nil && c.UUID != nil && n.ngs != nil {
		var err error
		ngs, err = n.ngs.ListNodeGroups(ctx, *c.UUID, db.ListOpts{}, db.NodeGroupFilters{})
		if err != nil {
			n.log.Warn("cannot list nodegroups for notification", append(request.From(ctx).LogAttrs(),
				"cluster_uuid", *c.UUID, "error", err)...)
		}
	}
	n.ClusterEventWith(ctx, action, outcome, c, ngs)
}

// ClusterEventWith is ClusterEvent with the cluster's nodegroups as given
// (as they were before an operation changed them), not as stored now.
func (n *Notifications) ClusterEventWith(ctx context.Context, action, outcome string, c *objects.Cluster, ngs []*objects.NodeGroup) {
	if n.notifier == nil {
		return
	}
	priority := PriorityInfo
	if outcome == OutcomeFailure {
		priority = PriorityError
	}
	eventType := "magnum.cluster." + action
	if err := n.notifier.Notify(ctx, priority, eventType, n.Payload(ctx, action, outcome, c, ngs)); err != nil {
		args := append(request.From(ctx).LogAttrs(), "event_type", eventType, "outcome", outcome, "error", err)
		if c != nil {
			args = append(args, "cluster_uuid", objects.Deref(c.UUID))
		}
		n.log.Error("cannot send notification", args...)
	}
}
