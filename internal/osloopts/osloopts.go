// Package osloopts builds the oslo.messaging transport options from
// magnum.conf: [DEFAULT], [oslo_messaging_rabbit] and
// [oslo_messaging_notifications]. The conductor and magnumctl use it, so
// that both reach the broker the same way (TLS, quorum queues, ...).
package osloopts

import (
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/config"
)

// From returns the transport options of cfg.
func From(cfg *config.Config) oslo.Options {
	o := oslo.DefaultOptions()
	d := cfg.Default
	o.TransportURL = d.TransportURL
	o.ControlExchange = d.ControlExchange
	o.RPCResponseTimeout = d.RPCResponseTimeout
	// Python forks [conductor]/workers processes, each with a pool of
	// executor_thread_pool_size threads; here the workers are goroutines of
	// one process, so the pool holds both together.
	o.ExecutorThreadPoolSize = d.ExecutorThreadPoolSize * cfg.Conductor.WorkerCount()
	o.Host = d.Host
	r := cfg.Rabbit
	o.Rabbit = oslo.RabbitOptions{
		SSL: r.SSL, SSLCAFile: r.SSLCAFile, SSLCertFile: r.SSLCertFile, SSLKeyFile: r.SSLKeyFile,
		SSLVersion: r.SSLVersion, SSLEnforceHostnameVerification: r.SSLEnforceHostnameVerification,
		HeartbeatTimeoutThreshold: r.HeartbeatTimeoutThreshold, HeartbeatRate: r.HeartbeatRate,
		RetryInterval: r.RabbitRetryInterval, RetryBackoff: r.RabbitRetryBackoff, IntervalMax: r.RabbitIntervalMax,
		KombuReconnectDelay: r.KombuReconnectDelay, FailoverShuffle: r.KombuFailoverStrategy == "shuffle",
		AMQPDurableQueues: r.AMQPDurableQueues, AMQPAutoDelete: r.AMQPAutoDelete,
		TransientQueuesTTL: r.RabbitTransientQueuesTTL, QoSPrefetchCount: r.RabbitQoSPrefetchCount,
		HAQueues: r.RabbitHAQueues, QuorumQueue: r.RabbitQuorumQueue, QuorumDeliveryLimit: r.RabbitQuorumDeliveryLimit,
		QuorumMaxMemoryLength: r.RabbitQuorumMaxMemoryLength, QuorumMaxMemoryBytes: int64(r.RabbitQuorumMaxMemoryBytes),
		MissingConsumerRetryTimeout: r.KombuMissingConsumerRetryTimeout,
		TransientQuorumQueue:        r.RabbitTransientQuorumQueue, StreamFanout: r.RabbitStreamFanout,
		UseQueueManager: r.UseQueueManager, QueueManagerHost: r.QueueManagerHostname,
		QueueManagerProcess: r.QueueManagerProcessname,
		KombuReconnectSplay: r.KombuReconnectSplay, CancelOnFailover: r.EnableCancelOnFailover,
		Compression: r.KombuCompression,
		PoolSize:    r.RPCConnPoolSize, PoolMinSize: r.ConnPoolMinSize, PoolTTL: r.ConnPoolTTL,
		LoginMethod: r.RabbitLoginMethod, NoDirectMandatory: !r.DirectMandatoryFlag,
		ReconnectIntervalMax: r.ReconnectIntervalMax, MaxMessageSize: int64(r.MaxMessageSize),
	}
	o.Notifications = oslo.NotificationOptions{
		Driver: cfg.Notifications.Driver, Topics: cfg.Notifications.Topics, TransportURL: cfg.Notifications.TransportURL,
		Retry: cfg.Notifications.Retry,
	}
	return o
}
