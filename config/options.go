package config

import (
	"runtime"
	"time"
)

// Config holds every option group the conductor reads. Each field's `group`
// tag names the oslo.config group ([DEFAULT] included); each group struct's
// fields carry the option definitions in their tags:
//
//	ini         option name in the file
//	default     default value, written as it would be in the file ("" means unset / None)
//	help        help text for the sample file
//	type        value syntax beyond the Go type: hostaddress, url, float
//	unit        for time.Duration fields: s (seconds) or min (minutes) of the integer (or float) value
//	min, max    inclusive numeric bounds
//	choices     allowed values, separated by |
//	multi       "true": a multi-string option (the key repeats; values accumulate over files)
//	secret      "true": never printed (redacted in LogValue and the sample)
//	deprecated  older group.name spellings still read, comma-separated, in order of preference
//	sample      what the sample file shows instead of the default
//	new         "true": an option of this conductor's own, which neither Magnum's Python services nor
//	            the oslo libraries have (on a group's field: every option of the group); the
//	            documentation lists these apart (docs/configuration.md)
//
// Constructors should receive only their own group (cfg.Database, cfg.Rabbit ...).
type Config struct {
	Default           DefaultOpts           `group:"DEFAULT"`
	Conductor         ConductorOpts         `group:"conductor"`
	Periodic          PeriodicOpts          `group:"periodic" new:"true"`
	Database          DatabaseOpts          `group:"database"`
	Rabbit            RabbitOpts            `group:"oslo_messaging_rabbit"`
	Notifications     NotificationsOpts     `group:"oslo_messaging_notifications"`
	Certificates      CertificatesOpts      `group:"certificates"`
	X509              X509Opts              `group:"x509"`
	Cluster           ClusterOpts           `group:"cluster"`
	ClusterHeat       ClusterHeatOpts       `group:"cluster_heat"`
	Kubernetes        KubernetesOpts        `group:"kubernetes"`
	Drivers           DriversOpts           `group:"drivers"`
	CAPIDriver        CAPIDriverOpts        `group:"capi_driver" new:"true"`
	Cinder            CinderOpts            `group:"cinder"`
	SimulatedDriver   SimulatedDriverOpts   `group:"simulated_driver" new:"true"`
	Trust             TrustOpts             `group:"trust"`
	KeystoneAuth      KeystoneAuthOpts      `group:"keystone_auth"`
	KeystoneAuthtoken KeystoneAuthtokenOpts `group:"keystone_authtoken"`
	BarbicanClient    BarbicanClientOpts    `group:"barbican_client"`
	Audit             AuditOpts             `group:"audit"`
	OsloReports       OsloReportsOpts       `group:"oslo_reports"`
}

// DefaultOpts is the [DEFAULT] group: transport (oslo.messaging), service and
// path options.
type DefaultOpts struct {
	TransportURL           string        `ini:"transport_url" type:"url" default:"rabbit://" secret:"true" help:"The network address and optional user credentials for connecting to the messaging backend, in URL format. The expected format is: driver://[user:pass@]host:port[,[userN:passN@]hostN:portN]/virtual_host?query Example: rabbit://rabbitmq:password@127.0.0.1:5672// For full details on the fields in the URL see the documentation of oslo_messaging.TransportURL at https://docs.openstack.org/oslo.messaging/latest/reference/transport.html"`
	Debug                  bool          `ini:"debug" default:"false" help:"If set to true, the logging level will be set to DEBUG instead of the default INFO level."`
	ControlExchange        string        `ini:"control_exchange" default:"magnum" help:"The default exchange under which topics are scoped. May be overridden by an exchange name specified in the transport_url option. (Magnum sets the default to magnum.)"`
	RPCResponseTimeout     time.Duration `ini:"rpc_response_timeout" unit:"s" default:"60" help:"Seconds to wait for a response from a call."`
	RPCPingEnabled         bool          `ini:"rpc_ping_enabled" default:"false" help:"Add an endpoint to answer to ping calls. Endpoint is named oslo_rpc_server_ping"`
	ExecutorThreadPoolSize int           `ini:"executor_thread_pool_size" default:"64" deprecated:"DEFAULT.rpc_thread_pool_size" help:"Size of executor thread pool when executor is threading or eventlet."`
	Host                   string        `ini:"host" type:"hostaddress" sample:"<current hostname>" help:"Name of this node. This can be an opaque identifier. It is not necessarily a hostname, FQDN, or IP address. However, the node name must be valid within an AMQP key. Defaults to the machine's hostname."`
	PeriodicEnable         bool          `ini:"periodic_enable" default:"true" help:"Enable periodic tasks."`
	PeriodicIntervalMax    time.Duration `ini:"periodic_interval_max" unit:"s" default:"60" help:"Max interval size between periodic tasks execution in seconds."`
	ServiceDownTime        time.Duration `ini:"service_down_time" unit:"s" default:"180" help:"Maximum time since last check-in for a service to be considered up (seconds)."`
	PasswordSymbols        []string      `ini:"password_symbols" default:"23456789,ABCDEFGHJKLMNPQRSTUVWXYZ,abcdefghijkmnopqrstuvwxyz" help:"Symbols to use for passwords"`
	Pybasedir              string        `ini:"pybasedir" default:"/usr/lib/python3/dist-packages/magnum" help:"Directory where the magnum python module is installed."`
	Bindir                 string        `ini:"bindir" default:"$pybasedir/bin" help:"Directory where magnum binaries are installed."`
	StatePath              string        `ini:"state_path" default:"$pybasedir" help:"Top-level directory for maintaining magnum's state."`
	Tempdir                string        `ini:"tempdir" help:"Explicitly specify the temporary working directory."`
	MaxManifestSize        int           `ini:"max_manifest_size" default:"524288" help:"Maximum raw byte size of any manifest."`

	// oslo.log's options (the command line's --log-file, --debug ... win
	// over these). See package oslolog for what each one does here.
	LogConfigAppend       string `ini:"log_config_append" deprecated:"DEFAULT.log_config" help:"The name of a Python logging configuration file. Not read by this conductor: when set, a warning is logged and the other logging options apply."`
	LogDateFormat         string `ini:"log_date_format" default:"%Y-%m-%d %H:%M:%S" help:"Defines the format string for %(asctime)s in log records (strftime directives), in oslo.log's line layout."`
	LogFile               string `ini:"log_file" deprecated:"DEFAULT.logfile" help:"(Optional) Name of log file to send logging output to. If no default is set, logging will go to stderr."`
	LogDir                string `ini:"log_dir" deprecated:"DEFAULT.logdir" help:"(Optional) The base directory used for relative log_file paths; with no log_file, the log goes to <log_dir>/<binary>.log."`
	WatchLogFile          bool   `ini:"watch_log_file" default:"false" help:"Reopen the log file when it is moved or removed. The log file is always reopened when that happens (and on SIGHUP)."`
	UseSyslog             bool   `ini:"use_syslog" default:"false" help:"Use syslog for logging."`
	UseJournal            bool   `ini:"use_journal" default:"false" help:"Enable journald for logging, with the journal's native protocol (structured fields such as REQUEST_ID)."`
	SyslogLogFacility     string `ini:"syslog_log_facility" default:"LOG_USER" help:"Syslog facility to receive log lines."`
	UseJSON               bool   `ini:"use_json" default:"false" help:"Use JSON formatting for logging."`
	UseStderr             bool   `ini:"use_stderr" default:"false" help:"Log output to standard error."`
	UseEventlog           bool   `ini:"use_eventlog" default:"false" help:"Log output to Windows Event Log (not available on Linux: a start-up error, as in oslo.log)."`
	LogRotationType       string `ini:"log_rotation_type" default:"none" help:"Log rotation type: none, size (rotate at max_logfile_size_mb) or interval (every log_rotate_interval log_rotate_interval_type), keeping max_logfile_count files."`
	MaxLogfileCount       int    `ini:"max_logfile_count" default:"30" help:"Maximum number of rotated log files."`
	MaxLogfileSizeMB      int    `ini:"max_logfile_size_mb" default:"200" help:"Log file maximum size in MB. This option is ignored if log_rotation_type is not set to size."`
	LogRotateInterval     int    `ini:"log_rotate_interval" default:"1" help:"The amount of time before the log files are rotated. This option is ignored unless log_rotation_type is set to interval."`
	LogRotateIntervalType string `ini:"log_rotate_interval_type" default:"days" help:"Rotation interval type (Seconds, Minutes, Hours, Days, Weekday, Midnight). This option is ignored unless log_rotation_type is set to interval."`
}

// ConductorOpts is the [conductor] group.
type ConductorOpts struct {
	Topic                        string        `ini:"topic" default:"magnum-conductor" help:"The queue to add conductor tasks to."`
	Workers                      int           `ini:"workers" min:"0" help:"Number of magnum-conductor processes to fork and run. Default to number of CPUs on the host."`
	ConductorLifeCheckTimeout    time.Duration `ini:"conductor_life_check_timeout" unit:"s" default:"4" help:"RPC timeout for the conductor liveness check that is used for cluster locking."`
	MetricsListen                string        `ini:"metrics_listen" new:"true" type:"listen" default:"" help:"Address (host:port, or :port, or a bare port) on which to serve Prometheus metrics and health checks. Empty disables the listener. Without a host the listener binds to 127.0.0.1 only."`
	ShutdownGracePeriod          time.Duration `ini:"shutdown_grace_period" new:"true" unit:"s" default:"30" min:"0" help:"Seconds to let in-flight RPC calls and periodic jobs finish after SIGTERM before the process exits."`
	DriverCallTimeout            time.Duration `ini:"driver_call_timeout" new:"true" unit:"s" default:"300" min:"1" help:"magnum-conductor (Go) only: seconds a cluster driver's operation (create, update, resize, upgrade, delete, nodegroup operations) may take before the conductor gives up on it and fails the operation. Drivers start long operations and return; their completion is observed by sync_cluster_status."`
	InterruptedOperationTimeout  time.Duration `ini:"interrupted_operation_timeout" new:"true" unit:"s" default:"0" min:"0" help:"magnum-conductor (Go) only: seconds after which an operation claimed in the database but never handed to its driver (its conductor killed, or its database lost, between the two) is resumed by a live conductor: a create still without stack_id, or a change the driver's back end does not show, counted from the cluster's last update. 0 means driver_call_timeout plus one sync_cluster_status interval (10 s), so that a conductor still handling the operation is never overtaken; shorter values risk calling the driver twice at once (harmless for an idempotent driver, but wasteful)."`
	InterruptedOperationAttempts int           `ini:"interrupted_operation_attempts" new:"true" default:"3" min:"0" help:"magnum-conductor (Go) only: how many times an interrupted operation (see interrupted_operation_timeout) is resumed before it is failed with a reason saying what happened. 0 fails it at the first interruption."`
	UpdateTimeout                time.Duration `ini:"update_timeout" new:"true" unit:"min" default:"-1" min:"-1" help:"magnum-conductor (Go) only: minutes a cluster update (cluster_update, cluster_resize, cluster_upgrade, a nodegroup operation) may stay UPDATE_IN_PROGRESS without converging before sync_cluster_status marks it UPDATE_FAILED with a reason naming what did not converge, counted from when the driver's back end took the update up (drivers that do not report it have no deadline). -1 bounds an update as Magnum's Heat driver does, by the stack's timeout: the cluster's create_timeout, else [cluster_heat] create_timeout. 0 sets no deadline."`
	ReleaseStartupPages          bool          `ini:"release_startup_pages" new:"true" default:"true" help:"15 seconds after it starts serving, ask the kernel to page out the executable's code and read-only data (madvise MADV_PAGEOUT, Linux 5.4 or later), so that the pages only start-up used (package initialisers) are no longer resident. Pages still in use are read back from the file on their next use."`
}

// WorkerCount is Workers, or the number of CPUs when unset or 0 (as
// magnum.cmd.conductor does with processutils.get_worker_count()).
func (c ConductorOpts) WorkerCount() int {
	if c.Workers > 0 {
		return c.Workers
	}
	return runtime.NumCPU()
}

// PeriodicOpts is the [periodic] group (new in the Go conductor).
type PeriodicOpts struct {
	Coordination string `ini:"coordination" default:"hash" choices:"hash|none" help:"How conductors share the periodic cluster jobs: hash gives each cluster to one live conductor (by consistent hashing over the magnum_service rows); none makes every conductor poll every cluster, as the Python conductor does."`
}

// DatabaseOpts is the [database] group (oslo.db plus Magnum's mysql_engine).
type DatabaseOpts struct {
	Connection            string        `ini:"connection" type:"url" default:"sqlite:///$state_path/magnum.sqlite" secret:"true" deprecated:"DEFAULT.sql_connection,DATABASE.sql_connection,sql.connection" help:"The SQLAlchemy connection string to use to connect to the database."`
	ConnectionParameters  string        `ini:"connection_parameters" default:"" help:"Optional URL parameters to append onto the connection URL at connect time; specify as param1=value1&param2=value2&..."`
	MaxPoolSize           int           `ini:"max_pool_size" default:"5" help:"Maximum number of SQL connections to keep open in a pool. Setting a value of 0 indicates no limit."`
	MaxOverflow           int           `ini:"max_overflow" default:"50" deprecated:"DEFAULT.sql_max_overflow,DATABASE.sqlalchemy_max_overflow" help:"If set, use this value for max_overflow with SQLAlchemy."`
	PoolTimeout           time.Duration `ini:"pool_timeout" unit:"s" deprecated:"DATABASE.sqlalchemy_pool_timeout" help:"If set, use this value for pool_timeout with SQLAlchemy."`
	ConnectionRecycleTime time.Duration `ini:"connection_recycle_time" unit:"s" default:"3600" help:"Connections which have been present in the connection pool longer than this number of seconds will be replaced with a new one the next time they are checked out from the pool."`
	MaxRetries            int           `ini:"max_retries" default:"10" deprecated:"DEFAULT.sql_max_retries,DATABASE.sql_max_retries" help:"Maximum number of database connection retries during startup. Set to -1 to specify an infinite retry count."`
	RetryInterval         time.Duration `ini:"retry_interval" unit:"s" default:"10" deprecated:"DEFAULT.sql_retry_interval,DATABASE.reconnect_interval" help:"Interval between retries of opening a SQL connection."`
	MySQLEngine           string        `ini:"mysql_engine" default:"InnoDB" help:"MySQL engine to use."`
	MySQLIOTimeout        time.Duration `ini:"mysql_io_timeout" new:"true" unit:"s" default:"30" min:"0" help:"magnum-conductor (Go) only, not an oslo.db option: seconds a read or write on a MySQL connection may wait before the statement fails, so that a database that stops answering (a network partition, a hung server) gives the caller an error instead of holding it until the kernel gives up on the connection. 0 waits forever."`
	MySQLSQLMode          string        `ini:"mysql_sql_mode" default:"TRADITIONAL" help:"The SQL mode to be used for MySQL sessions. This option, including the default, overrides any server-set SQL mode. To use whatever SQL mode is set by the server configuration, set this to no value. Example: mysql_sql_mode="`
	ConnectionDebug       int           `ini:"connection_debug" default:"0" min:"0" max:"100" deprecated:"DEFAULT.sql_connection_debug" help:"Verbosity of SQL debugging information: 0=None, 100=Everything."`
	SqliteSynchronous     bool          `ini:"sqlite_synchronous" default:"true" deprecated:"DEFAULT.sqlite_synchronous" help:"If True, SQLite uses synchronous mode."`
}

// RabbitOpts is the [oslo_messaging_rabbit] group.
type RabbitOpts struct {
	SSL                              bool          `ini:"ssl" default:"false" deprecated:"oslo_messaging_rabbit.rabbit_use_ssl" help:"Connect over SSL."`
	SSLCAFile                        string        `ini:"ssl_ca_file" default:"" deprecated:"oslo_messaging_rabbit.kombu_ssl_ca_certs" help:"SSL certification authority file (valid only if SSL enabled)."`
	SSLCertFile                      string        `ini:"ssl_cert_file" default:"" deprecated:"oslo_messaging_rabbit.kombu_ssl_certfile" help:"SSL cert file (valid only if SSL enabled)."`
	SSLKeyFile                       string        `ini:"ssl_key_file" default:"" deprecated:"oslo_messaging_rabbit.kombu_ssl_keyfile" help:"SSL key file (valid only if SSL enabled)."`
	SSLVersion                       string        `ini:"ssl_version" default:"" deprecated:"oslo_messaging_rabbit.kombu_ssl_version" help:"SSL version to use (valid only if SSL enabled). Valid values are TLSv1 and SSLv23. SSLv2, SSLv3, TLSv1_1, and TLSv1_2 may be available on some distributions."`
	SSLEnforceHostnameVerification   bool          `ini:"ssl_enforce_hostname_verification" default:"false" help:"When true, verify the broker hostname against the certificate when ssl_ca_file is set."`
	HeartbeatTimeoutThreshold        time.Duration `ini:"heartbeat_timeout_threshold" unit:"s" default:"60" help:"Number of seconds after which the Rabbit broker is considered down if heartbeat's keep-alive fails (0 disables heartbeat)."`
	HeartbeatRate                    int           `ini:"heartbeat_rate" default:"2" help:"How often times during the heartbeat_timeout_threshold we check the heartbeat."`
	RabbitRetryInterval              time.Duration `ini:"rabbit_retry_interval" unit:"s" default:"1" help:"How frequently to retry connecting with RabbitMQ."`
	RabbitRetryBackoff               time.Duration `ini:"rabbit_retry_backoff" unit:"s" default:"2" deprecated:"DEFAULT.rabbit_retry_backoff" help:"How long to backoff for between retries when connecting to RabbitMQ."`
	RabbitIntervalMax                time.Duration `ini:"rabbit_interval_max" unit:"s" default:"30" help:"Maximum interval of RabbitMQ connection retries. Default is 30 seconds."`
	RabbitLoginMethod                string        `ini:"rabbit_login_method" default:"AMQPLAIN" choices:"PLAIN|AMQPLAIN|EXTERNAL|RABBIT-CR-DEMO" deprecated:"DEFAULT.rabbit_login_method" help:"The RabbitMQ login method."`
	AMQPDurableQueues                bool          `ini:"amqp_durable_queues" default:"false" help:"Use durable queues in AMQP. If rabbit_quorum_queue is enabled, queues will be durable and this value will be ignored."`
	AMQPAutoDelete                   bool          `ini:"amqp_auto_delete" default:"false" deprecated:"DEFAULT.amqp_auto_delete" help:"Auto-delete queues in AMQP."`
	RabbitHAQueues                   bool          `ini:"rabbit_ha_queues" default:"false" deprecated:"DEFAULT.rabbit_ha_queues" help:"Try to use HA queues in RabbitMQ (x-ha-policy: all). If you change this option, you must wipe the RabbitMQ database. Cannot be combined with rabbit_quorum_queue."`
	RabbitTransientQueuesTTL         time.Duration `ini:"rabbit_transient_queues_ttl" unit:"s" default:"1800" min:"1" help:"Positive integer representing duration in seconds for queue TTL (x-expires). Queues which are unused for the duration of the TTL are automatically deleted. The parameter affects only reply and fanout queues."`
	RabbitQoSPrefetchCount           int           `ini:"rabbit_qos_prefetch_count" default:"0" help:"Specifies the number of messages to prefetch. magnum-conductor (Go): the total for the listener's three consumers (topic, server and fanout queues; the topic gets all but 1/32 each for the other two), at least one each; zero means min(executor pool + 64, 64 MiB / max_message_size) rather than unlimited, so that prefetch x max_message_size bounds the bytes waiting for a worker."`
	RabbitQuorumQueue                bool          `ini:"rabbit_quorum_queue" default:"false" help:"Use quorum queues in RabbitMQ (x-queue-type: quorum). The quorum queue is a modern queue type for RabbitMQ implementing a durable, replicated FIFO queue based on the Raft consensus algorithm. If set this option will conflict with the HA queues (rabbit_ha_queues) aka mirrored queues, in other words the HA queues should be disabled."`
	RabbitQuorumDeliveryLimit        int           `ini:"rabbit_quorum_delivery_limit" default:"0" help:"Each time a message is redelivered to a consumer, a counter is incremented. Once the redelivery count exceeds the delivery limit the message gets dropped or dead-lettered (if a DLX exchange has been configured) Used only when rabbit_quorum_queue is enabled, Default 0 which means dont set a limit."`
	RabbitQuorumMaxMemoryLength      int           `ini:"rabbit_quorum_max_memory_length" default:"0" deprecated:"oslo_messaging_rabbit.rabbit_quroum_max_memory_length" help:"By default all messages are maintained in memory if a quorum queue grows in length it can put memory pressure on a cluster. This option can limit the number of messages in the quorum queue. Used only when rabbit_quorum_queue is enabled, Default 0 which means dont set a limit."`
	RabbitQuorumMaxMemoryBytes       int           `ini:"rabbit_quorum_max_memory_bytes" default:"0" deprecated:"oslo_messaging_rabbit.rabbit_quroum_max_memory_bytes" help:"By default all messages are maintained in memory if a quorum queue grows in length it can put memory pressure on a cluster. This option can limit the number of memory bytes used by the quorum queue. Used only when rabbit_quorum_queue is enabled, Default 0 which means dont set a limit."`
	RabbitTransientQuorumQueue       bool          `ini:"rabbit_transient_quorum_queue" default:"false" help:"Use quorum queues for transients queues in RabbitMQ. Enabling this option will then make sure those queues are also using quorum kind of rabbit queues, which are HA by default."`
	RabbitStreamFanout               bool          `ini:"rabbit_stream_fanout" default:"false" help:"Use stream queues in RabbitMQ (x-queue-type: stream). Streams are a new persistent and replicated data structure (\"queue type\") in RabbitMQ which models an append-only log with non-destructive consumer semantics. It is available as of RabbitMQ 3.9.0. If set this option will replace all fanout queues with only one stream queue."`
	UseQueueManager                  bool          `ini:"use_queue_manager" default:"false" help:"Should we use consistant queue names or random ones"`
	QueueManagerHostname             string        `ini:"hostname" default:"" help:"Hostname used by queue manager. Defaults to the value returned by socket.gethostname()."`
	QueueManagerProcessname          string        `ini:"processname" default:"" help:"Process name used by queue manager. Defaults to the program's name."`
	KombuReconnectDelay              time.Duration `ini:"kombu_reconnect_delay" type:"float" unit:"s" default:"1.0" min:"0" help:"How long to wait (in seconds) before reconnecting in response to an AMQP consumer cancel notification."`
	KombuFailoverStrategy            string        `ini:"kombu_failover_strategy" default:"round-robin" choices:"round-robin|shuffle" help:"Determines how the next RabbitMQ node is chosen in case the one we are currently connected to becomes unavailable. Takes effect only if more than one RabbitMQ node is provided in config."`
	KombuMissingConsumerRetryTimeout time.Duration `ini:"kombu_missing_consumer_retry_timeout" unit:"s" default:"60" deprecated:"oslo_messaging_rabbit.kombu_reconnect_timeout" help:"How long to wait a missing client before abandoning to send it its replies. This value should not be longer than rpc_response_timeout."`
	RPCConnPoolSize                  int           `ini:"rpc_conn_pool_size" default:"30" min:"1" deprecated:"DEFAULT.rpc_conn_pool_size" help:"Size of RPC connection pool."`
	ConnPoolMinSize                  int           `ini:"conn_pool_min_size" default:"2" help:"The pool size limit for connections expiration policy"`
	ConnPoolTTL                      time.Duration `ini:"conn_pool_ttl" unit:"s" default:"1200" help:"The time-to-live in sec of idle connections in the pool"`
	SSLEnforceFIPSMode               bool          `ini:"ssl_enforce_fips_mode" default:"false" help:"Global toggle for enforcing the OpenSSL FIPS mode. Deprecated for removal: the FIPS_mode_set API was removed in OpenSSL 3.0.0 and this option has no effect now."`
	KombuReconnectSplay              time.Duration `ini:"kombu_reconnect_splay" type:"float" unit:"s" default:"0.0" min:"0" help:"Random time to wait for when reconnecting in response to an AMQP consumer cancel notification."`
	KombuCompression                 string        `ini:"kombu_compression" help:"EXPERIMENTAL: Possible values are: gzip, bz2. If not set compression will not be used. This option may not be available in future versions."`
	EnableCancelOnFailover           bool          `ini:"enable_cancel_on_failover" default:"false" help:"Enable x-cancel-on-ha-failover flag so that rabbitmq server will cancel and notify consumers when queue is down"`
	DirectMandatoryFlag              bool          `ini:"direct_mandatory_flag" default:"true" help:"Enable/Disable the RabbitMQ mandatory flag for direct send. The direct send is used as reply, so the MessageUndeliverable exception is raised in case the client queue does not exist."`
	ReconnectIntervalMax             time.Duration `ini:"reconnect_interval_max" new:"true" type:"float" unit:"s" default:"1.0" min:"0" help:"magnum-conductor (Go) only, not an oslo.messaging option: the longest wait, in seconds, between two attempts to reach the broker. The first attempt after a lost connection is immediate; the waits then grow as oslo.messaging makes them grow from rabbit_retry_interval, rabbit_retry_backoff, rabbit_interval_max and kombu_reconnect_delay, but never past this, so that a broker that is back (and the queues declared again) is found within it. 0 leaves oslo.messaging's schedule uncapped."`
	MaxMessageSize                   int           `ini:"max_message_size" new:"true" default:"1048576" min:"4096" max:"536870912" help:"magnum-conductor (Go) only, not an oslo.messaging option: the largest RPC request, in bytes, the conductor reads. A larger one (RabbitMQ accepts up to 128 MiB) is never read into memory: its body is dropped as it arrives, a call gets InvalidParameterValue back, and it is logged. It also bounds what a compressed request may expand to, and with rabbit_qos_prefetch_count unset the prefetch is at most 64 MiB worth of such requests. magnum-api's requests are tens of KiB."`
}

// NotificationsOpts is the [oslo_messaging_notifications] group.
type NotificationsOpts struct {
	Driver       []string `ini:"driver" multi:"true" deprecated:"DEFAULT.notification_driver" help:"The Drivers(s) to handle sending notifications. Possible values are messaging, messagingv2, routing, log, test, noop"`
	TransportURL string   `ini:"transport_url" type:"url" secret:"true" deprecated:"DEFAULT.notification_transport_url" help:"A URL representing the messaging driver to use for notifications. If not set, we fall back to the same configuration used for RPC."`
	Topics       []string `ini:"topics" default:"notifications" deprecated:"rpc_notifier2.topics,DEFAULT.notification_topics" help:"AMQP topic used for OpenStack notifications."`
	Retry        int      `ini:"retry" default:"-1" help:"The maximum number of attempts to re-send a notification message which failed to be delivered due to a recoverable error. 0 - No retry, -1 - indefinite"`
}

// CertificatesOpts is the [certificates] group.
type CertificatesOpts struct {
	CertManagerType string `ini:"cert_manager_type" default:"barbican" choices:"barbican|x509keypair|local" help:"Certificate Manager plugin. Defaults to barbican."`
	StoragePath     string `ini:"storage_path" default:"/var/lib/magnum/certificates/" help:"Absolute path of the certificate storage directory. Defaults to /var/lib/magnum/certificates/."`
}

// X509Opts is the [x509] group.
type X509Opts struct {
	AllowCA                bool     `ini:"allow_ca" default:"false" help:"Certificate can get the CA flag in x509 extensions."`
	AllowedExtensions      []string `ini:"allowed_extensions" default:"keyUsage,extendedKeyUsage,subjectAltName,basicConstraints,subjectKeyIdentifier" help:"List of allowed x509 extensions. Available values: \"authorityKeyIdentifier\", \"subjectKeyIdentifier\", \"authorityInfoAccess\", \"basicConstraints\", \"cRLDistributionPoints\", \"certificatePolicies\", \"extendedKeyUsage\", \"OCSPNoCheck\", \"inhibitAnyPolicy\", \"keyUsage\", \"nameConstraints\", \"subjectAltName\", \"issuerAltName\""`
	AllowedKeyUsage        []string `ini:"allowed_key_usage" default:"Digital Signature,Key Encipherment,Non Repudiation" help:"List of allowed x509 key usage. Available values: \"Digital Signature\", \"Non Repudiation\", \"Key Encipherment\", \"Data Encipherment\", \"Key Agreement\", \"Certificate Sign\", \"CRL Sign\", \"Encipher Only\", \"Decipher Only\""`
	TermOfValidity         int      `ini:"term_of_validity" default:"1825" min:"1" help:"Number of days for which a certificate is valid."`
	RSAKeySize             int      `ini:"rsa_key_size" default:"2048" min:"1024" help:"Size of generated private key."`
	KeyPoolSize            int      `ini:"key_pool_size" new:"true" default:"4" min:"0" help:"Number of RSA private keys generated ahead of time in the background, so that cluster creation does not wait for key generation. 0 disables the pool."`
	RefuseSystemMastersCSR bool     `ini:"refuse_system_masters_csr" new:"true" default:"true" help:"Refuse to sign certificate signing requests whose subject organization is system:masters (Kubernetes cluster-admin) unless the caller has the admin role. Magnum signs them for anyone allowed certificate:create, and python-magnumclient's 'openstack coe cluster config' asks for system:masters: set this to false to let project members get a kubeconfig as with Magnum."`
}

// ClusterOpts is the [cluster] group.
type ClusterOpts struct {
	TempCacheDir                       string        `ini:"temp_cache_dir" default:"/var/lib/magnum/certificate-cache" help:"Explicitly specify the temporary directory to hold cached TLS certs."`
	PreDeleteLBTimeout                 time.Duration `ini:"pre_delete_lb_timeout" unit:"s" default:"60" help:"The timeout in seconds to wait for the load balancers to be deleted."`
	NodesAffinityPolicy                string        `ini:"nodes_affinity_policy" default:"soft-anti-affinity" help:"Affinity policy for server group of cluster nodes. Possible values include \"affinity\", \"anti-affinity\", \"soft-affinity\" and \"soft-anti-affinity\"."`
	EtcdDiscoveryServiceEndpointFormat string        `ini:"etcd_discovery_service_endpoint_format" default:"https://discovery.etcd.io/new?size=%(size)d" deprecated:"bay.etcd_discovery_service_endpoint_format" help:"Url for etcd public discovery endpoint."`
}

// ClusterHeatOpts is the [cluster_heat] group. create_timeout is the default
// cluster creation timeout when a cluster has none.
type ClusterHeatOpts struct {
	CreateTimeout time.Duration `ini:"create_timeout" unit:"min" default:"60" deprecated:"bay_heat.bay_create_timeout" help:"The length of time to let cluster creation continue. This interval is in minutes. The default is 60 minutes."`
	MaxAttempts   int           `ini:"max_attempts" default:"2000" deprecated:"bay_heat.max_attempts" help:"Number of attempts to query the Heat stack for finding out the status of the created stack and getting template outputs. This value is ignored during cluster creation if timeout is set as the poll will continue until cluster creation either ends or times out."`
	WaitInterval  time.Duration `ini:"wait_interval" unit:"s" default:"1" deprecated:"bay_heat.wait_interval" help:"Sleep time interval between two attempts of querying the Heat stack. This interval is in seconds."`
}

// KubernetesOpts is the [kubernetes] group (health polling).
type KubernetesOpts struct {
	HealthPollingInterval     time.Duration `ini:"health_polling_interval" unit:"s" default:"60" help:"The default polling interval for Kubernetes cluster health. If this number is negative the periodic task will be disabled."`
	HealthConnectTimeout      time.Duration `ini:"health_connect_timeout" new:"true" unit:"s" default:"5" min:"1" help:"Seconds to wait for a TCP/TLS connection to a cluster's Kubernetes API during a health poll."`
	HealthRequestTimeout      time.Duration `ini:"health_request_timeout" new:"true" unit:"s" default:"10" min:"1" help:"Seconds a whole health request to a cluster's Kubernetes API may take."`
	HealthPollWorkers         int           `ini:"health_poll_workers" new:"true" default:"128" min:"1" help:"Maximum number of clusters polled for health at the same time. Polls wait on the network, so the pool is large: each unreachable API server holds a worker for up to health_connect_timeout."`
	HealthKeepStatusOnError   bool          `ini:"health_keep_status_on_error" new:"true" default:"false" help:"When a health poll fails (the API is unreachable), keep the cluster's previous health_status instead of setting UNKNOWN."`
	KeystoneAuthDefaultPolicy string        `ini:"keystone_auth_default_policy" default:"/etc/magnum/keystone_auth_default_policy.json" help:"Explicitly specify the path to the file defined default Keystone auth policy for Kubernetes cluster when the Keystone auth is enabled. Vendors can put their specific default policy here"`
	PostInstallManifestURL    string        `ini:"post_install_manifest_url" default:"" help:"An URL of the manifest file will be installed after the Kubernetes cluster created. For exmaple, this could be a file including the vendor specific storage class."`
}

// DriversOpts is the [drivers] group.
type DriversOpts struct {
	DisabledDrivers    []string `ini:"disabled_drivers" default:"" help:"Disabled driver entry points. The default value is []. Means if not specified, then all available drivers are enabled."`
	EnabledBetaDrivers []string `ini:"enabled_beta_drivers" help:"List of beta drivers to enable. Beta drivers are not enabled unless listed here."`
	DefaultDriver      string   `ini:"default_driver" help:"Name of the driver used when a cluster template names none and no driver matches (server_type, os, coe) uniquely."`
	VerifyCA           bool     `ini:"verify_ca" default:"true" help:"Indicates whether the cluster nodes validate the Certificate Authority when making requests to the OpenStack APIs (Keystone, Magnum, Heat). If you have self-signed certificates for the OpenStack APIs or you have your own Certificate Authority and you have not installed the Certificate Authority to all nodes, you may need to disable CA validation by setting this flag to False."`
	OpenstackCAFile    string   `ini:"openstack_ca_file" default:"" help:"Path to the OpenStack CA-bundle file to pass and install in all cluster nodes."`
	SendClusterMetrics bool     `ini:"send_cluster_metrics" default:"false" help:"Allow periodic tasks to pull COE data and send to ceilometer."`
}

// CAPIDriverOpts is the [capi_driver] group (the Cluster API driver, new in
// the Go conductor).
type CAPIDriverOpts struct {
	Kubeconfig          string            `ini:"kubeconfig" default:"" help:"Path to the kubeconfig of the management cluster that runs Cluster API. Empty uses the in-cluster configuration (the conductor running in a pod of that cluster); KUBECONFIG and ~/.kube/config are not read."`
	NamespacePrefix     string            `ini:"namespace_prefix" default:"magnum-" help:"Prefix of the per-project namespace in the management cluster: <prefix><project_id>."`
	ClusterClassName    string            `ini:"cluster_class_name" default:"magnum" help:"Not used: the driver names the ClusterClasses it installs magnum-<cluster_class_version>. A warning is logged when this is set to anything but magnum."`
	ClusterClassVersion string            `ini:"cluster_class_version" default:"" help:"Version of the ClusterClass the driver installs and its Cluster objects refer to (the class is magnum-<version>); empty uses the newest this driver ships."`
	ClassDir            string            `ini:"class_dir" default:"" help:"Directory of ClusterClass bundles beside the ones this driver ships: each file <version>.yaml holds one ClusterClass named magnum-<version> and the templates it refers to, and replaces the shipped bundle of the same version. For another infrastructure provider or a site's own class, with the same variables; select it with cluster_class_version. Empty uses the shipped bundles only."`
	CreateTimeout       time.Duration     `ini:"create_timeout" unit:"min" default:"60" min:"1" help:"Minutes a cluster may stay in CREATE_IN_PROGRESS before it is marked CREATE_FAILED, when the cluster sets no create_timeout."`
	DeleteTimeout       time.Duration     `ini:"delete_timeout" unit:"min" default:"60" min:"1" help:"Minutes a cluster may stay in DELETE_IN_PROGRESS before it is marked DELETE_FAILED."`
	FlavorLabelDefaults map[string]string `ini:"flavor_label_defaults" help:"Labels applied to every cluster unless the template or cluster sets them, as key:value pairs, for example boot_volume_size:20,boot_volume_type:ssd. A label the driver does not know, or a value it refuses, stops the conductor at start."`
	DriverAliases       []string          `ini:"driver_aliases" default:"k8s_cluster_api_ubuntu,k8s_cluster_api_ubuntu_focal,k8s_cluster_api_debian,k8s_cluster_api_flatcar,k8s_cluster_api_rockylinux,k8s_capi_helm_v1" help:"Names of other cluster drivers whose cluster templates the Cluster API driver serves: by default the entry points of vexxhost's magnum-cluster-api and of magnum-capi-helm, so that their templates keep working after a switch. Clusters those drivers created are recognised by their stack_id and refused (every operation, with a reason; never reported deleted or failed) until they are adopted; new clusters from their templates are the Cluster API driver's. Empty: none."`
	ManagementCIDRs     []string          `ini:"management_cidrs" help:"CIDRs the management cluster's requests to workload clusters come from (its egress or NAT addresses). They are added to every cluster's non-empty api_master_lb_allowed_cidrs, so that a narrow list never locks Cluster API out of the cluster it manages."`
	ManagementRouted    bool              `ini:"management_network_routed" default:"false" help:"Whether the management cluster reaches the clusters' private networks (routed, VPN or a shared provider network). When false, clusters whose API has no floating IP (floating_ip_enabled or master_lb_floating_ip_enabled false) are refused at create, since Cluster API could not manage them."`
	MinFlavorRAMMB      int               `ini:"min_flavor_ram_mb" default:"2048" min:"0" deprecated:"capi_helm.minimum_flavor_ram" help:"Smallest flavor RAM, in MB, of a Kubernetes node: a cluster create, upgrade or nodegroup create with a smaller master or worker flavor fails with InvalidParameterValue (the flavor is looked up in Nova with the cluster's credential). 0 disables the check. magnum-capi-helm's [capi_helm] minimum_flavor_ram is read too."`
	MinFlavorVCPUs      int               `ini:"min_flavor_vcpus" default:"2" min:"0" deprecated:"capi_helm.minimum_flavor_vcpus" help:"Smallest number of vCPUs of a Kubernetes node's flavor, checked like min_flavor_ram_mb. 0 disables the check. magnum-capi-helm's [capi_helm] minimum_flavor_vcpus is read too."`
	KubeconfigContext   string            `ini:"kubeconfig_context" default:"" help:"Context of the kubeconfig to use; empty uses its current context."`
	StartTimeout        time.Duration     `ini:"start_timeout" unit:"s" default:"60" min:"1" help:"Seconds one start attempt of the Cluster API driver may take (the management cluster answers and the driver's caches fill). The conductor waits for the first attempt only; when it fails, the driver stays registered but refuses every operation, and retries in the background (pauses doubling from 5 s to 5 min) until the management cluster answers. Also bounds the refill of the caches when a lost management cluster answers again."`
	ProbeInterval       time.Duration     `ini:"management_probe_interval" unit:"s" default:"10" min:"1" help:"Seconds between the started driver's checks that the management cluster answers (one request listing at most one Cluster), and at once when a watch of its caches fails. While it does not answer, cluster status sync leaves the driver's clusters as they are (no deadline fails them) and their health reads UNKNOWN; when it answers again the caches are refilled first."`
	ProbeTimeout        time.Duration     `ini:"management_probe_timeout" unit:"s" default:"5" min:"1" help:"Seconds one check of the management cluster may take before it counts as not answering."`
	ResyncPeriod        time.Duration     `ini:"resync_period" unit:"s" default:"600" min:"0" help:"Seconds between full resyncs of the driver's watch caches of Cluster API objects; 0 disables periodic resyncs."`
	CloudRegion         string            `ini:"cloud_region" default:"" help:"OpenStack region written into the clouds.yaml of each cluster's cloud-credentials Secret (used by the OpenStack Cluster API provider); empty writes none."`
	CloudInterface      string            `ini:"cloud_interface" default:"public" choices:"public|internal|admin" help:"Endpoint interface written into the clouds.yaml of each cluster's cloud-credentials Secret."`
	CloudCAFile         string            `ini:"cloud_ca_file" default:"" help:"PEM file of the CA that signs the OpenStack API endpoints, copied into each cluster's cloud-credentials Secret; empty uses the system CAs."`
	AutoscalerImage     string            `ini:"autoscaler_image" default:"registry.k8s.io/autoscaling/cluster-autoscaler" help:"cluster-autoscaler image (without a tag) run in the management cluster for each cluster with autoscaled nodegroups; the tag is the cluster's autoscaler_tag label, else v<Kubernetes minor>.0. Point it at a local registry for air-gapped clouds."`
	KeystoneTimeout     time.Duration     `ini:"keystone_timeout" unit:"s" default:"30" min:"1" help:"Seconds an HTTP request to Keystone may take when the driver creates, verifies or deletes a cluster's application credential."`
	AddonsEnabled       bool              `ini:"addons_enabled" default:"true" help:"Deliver add-ons (CNI, OpenStack cloud controller manager, Cinder and Manila CSI, metrics-server, extra_addons_dir) to every cluster with a Cluster API ClusterResourceSet, rendered from Helm charts; a create or update completes once they are applied. The management cluster must serve addons.cluster.x-k8s.io/v1beta2."`
	Addons              []string          `ini:"addons" default:"cni,cloud-provider,cinder-csi,manila-csi,metrics-server,keystone-auth" help:"Built-in add-ons delivered (each still subject to its cluster label): cni, cloud-provider, cinder-csi, manila-csi (with csi-driver-nfs, its NFS node plugin), metrics-server, keystone-auth. Leave one out to install it another way."`
	AddonChartRepos     map[string]string `ini:"addon_chart_repositories" help:"Helm repository (HTTP(S) URL of its index.yaml's folder, or an OCI registry as oci://host[:port]/path) per add-on, as name:url pairs; names: calico, cilium, openstack-cloud-controller-manager, cinder-csi, manila-csi, csi-driver-nfs (the NFS node plugin delivered with manila-csi), metrics-server. Unset ones use the upstream repositories. For a mirror."`
	AddonChartNames     map[string]string `ini:"addon_chart_names" help:"Chart name per add-on, as name:chart pairs (default tigera-operator, cilium, openstack-cloud-controller-manager, openstack-cinder-csi, openstack-manila-csi, csi-driver-nfs, metrics-server)."`
	AddonChartVersions  map[string]string `ini:"addon_chart_versions" help:"Chart version per add-on for every Kubernetes version, as name:version pairs, instead of the driver's table by Kubernetes minor. The calico_tag and cilium_tag labels still win."`
	AddonImageRegistry  string            `ini:"addon_image_registry" default:"" help:"Registry (and path) every image of the built-in add-ons is pulled from, as <registry>/<image name>:<tag>, for air-gapped clouds; a cluster's container_infra_prefix label wins. Empty keeps the charts' images."`
	AddonChartCacheDir  string            `ini:"addon_chart_cache_dir" default:"$state_path/capi-charts" help:"Directory where fetched add-on charts are kept (by repository, name and version; checked against the repository index's digest when fetched)."`
	ExtraAddonsDir      string            `ini:"extra_addons_dir" default:"" help:"Directory of a site's own add-ons, delivered to every cluster after the built-in ones: one folder per add-on, named after it, holding chart.yaml (repo, chart, version, namespace, values) or manifests.yaml. Empty: none."`
}

// CinderOpts is Magnum's [cinder] group: volume defaults of the Cluster API
// driver's clusters (beneath [capi_driver] flavor_label_defaults and the
// template's and cluster's labels).
type CinderOpts struct {
	DefaultDockerVolumeType string `ini:"default_docker_volume_type" default:"" help:"The default docker volume_type to use for volumes used for docker storage. To use the cinder volumes for docker storage, you need to select a default value. Otherwise, Magnum will select random one."`
	DefaultEtcdVolumeType   string `ini:"default_etcd_volume_type" default:"" help:"The default etcd volume_type to use for volumes used for etcd storage. To use the cinder volumes for etcd storage, you need to select a default value. Otherwise, Magnum will select random one."`
	DefaultBootVolumeType   string `ini:"default_boot_volume_type" default:"" help:"The default volume_type to use for boot volumes. To use the cinder volumes for boot volume, you need to select a default value. Otherwise, Magnum will select random one."`
	DefaultBootVolumeSize   int    `ini:"default_boot_volume_size" default:"0" help:"The default volume size to use for boot volumes."`
}

// SimulatedDriverOpts is the [simulated_driver] group.
type SimulatedDriverOpts struct {
	Enabled        bool          `ini:"enabled" default:"false" help:"Register the simulated driver, which creates no resources and moves clusters through their states after operation_delay. For development and tests only."`
	OperationDelay time.Duration `ini:"operation_delay" type:"float" unit:"s" default:"5" min:"0" help:"Seconds the simulated driver takes to complete an operation."`
}

// TrustOpts is the [trust] group (15.0.1 trustee handling).
type TrustOpts struct {
	ClusterUserTrust             bool     `ini:"cluster_user_trust" default:"false" help:"This setting controls whether to assign a trust to the cluster user or not. You will need to set it to True for clusters with volume_driver=cinder or registry_enabled=true in the underlying cluster template to work. This is a potential security risk since the trust gives instances OpenStack API access to the cluster's project. Note that this setting does not affect per-cluster trusts assigned to the Magnum service user."`
	TrusteeDomainID              string   `ini:"trustee_domain_id" help:"Id of the domain to create trustee for clusters"`
	TrusteeDomainName            string   `ini:"trustee_domain_name" help:"Name of the domain to create trustee for s"`
	TrusteeDomainAdminID         string   `ini:"trustee_domain_admin_id" help:"Id of the admin with roles sufficient to manage users in the trustee_domain"`
	TrusteeDomainAdminName       string   `ini:"trustee_domain_admin_name" help:"Name of the admin with roles sufficient to manage users in the trustee_domain"`
	TrusteeDomainAdminDomainID   string   `ini:"trustee_domain_admin_domain_id" help:"Id of the domain admin user's domain. trustee_domain_id is used by default"`
	TrusteeDomainAdminDomainName string   `ini:"trustee_domain_admin_domain_name" help:"Name of the domain admin user's domain. trustee_domain_name is used by default"`
	TrusteeDomainAdminPassword   string   `ini:"trustee_domain_admin_password" secret:"true" help:"Password of trustee_domain_admin"`
	Roles                        []string `ini:"roles" default:"" help:"The roles which are delegated to the trustee by the trustor"`
	TrusteeKeystoneInterface     string   `ini:"trustee_keystone_interface" default:"public" help:"Auth interface used by instances/trustee"`
	TrusteeKeystoneRegionName    string   `ini:"trustee_keystone_region_name" help:"Region in Identity service catalog to use for communication with the OpenStack service."`
}

// KeystoneAuthOpts is the [keystone_auth] group: keystoneauth1 password
// plugin and session options for the service (admin) credentials.
type KeystoneAuthOpts struct {
	AuthType          string        `ini:"auth_type" default:"password" deprecated:"keystone_auth.auth_plugin" help:"Authentication type to load"`
	AuthSection       string        `ini:"auth_section" help:"Config Section from which to load plugin specific options"`
	AuthURL           string        `ini:"auth_url" type:"url" help:"Authentication URL"`
	Username          string        `ini:"username" deprecated:"keystone_auth.user-name,keystone_auth.user_name" help:"Username"`
	Password          string        `ini:"password" secret:"true" help:"User's password"`
	UserID            string        `ini:"user_id" help:"User id"`
	ProjectName       string        `ini:"project_name" deprecated:"keystone_auth.tenant-name,keystone_auth.tenant_name" help:"Project name to scope to"`
	ProjectID         string        `ini:"project_id" deprecated:"keystone_auth.tenant-id,keystone_auth.tenant_id" help:"Project ID to scope to"`
	UserDomainName    string        `ini:"user_domain_name" help:"User's domain name"`
	UserDomainID      string        `ini:"user_domain_id" help:"User's domain id"`
	ProjectDomainName string        `ini:"project_domain_name" help:"Domain name containing project"`
	ProjectDomainID   string        `ini:"project_domain_id" help:"Domain ID containing project"`
	SystemScope       string        `ini:"system_scope" help:"Scope for system operations"`
	TrustID           string        `ini:"trust_id" help:"ID of the trust to use as a trustee use"`
	Cafile            string        `ini:"cafile" deprecated:"keystone_authtoken.cafile" help:"PEM encoded Certificate Authority to use when verifying HTTPs connections."`
	Certfile          string        `ini:"certfile" deprecated:"keystone_authtoken.certfile" help:"PEM encoded client certificate cert file"`
	Keyfile           string        `ini:"keyfile" deprecated:"keystone_authtoken.keyfile" help:"PEM encoded client certificate key file"`
	Insecure          bool          `ini:"insecure" default:"false" deprecated:"keystone_authtoken.insecure" help:"Verify HTTPS connections."`
	Timeout           time.Duration `ini:"timeout" unit:"s" deprecated:"keystone_authtoken.timeout" help:"Timeout value for http requests"`
}

// KeystoneAuthtokenOpts is the part of [keystone_authtoken]
// (keystonemiddleware) the conductor reads.
type KeystoneAuthtokenOpts struct {
	WWWAuthenticateURI string `ini:"www_authenticate_uri" type:"url" deprecated:"keystone_authtoken.auth_uri" help:"Complete \"public\" Identity API endpoint. This endpoint should not be an \"admin\" endpoint, as it should be accessible by all end users. Unauthenticated clients are redirected to this endpoint to authenticate."`
	Cafile             string `ini:"cafile" help:"A PEM encoded Certificate Authority to use when verifying HTTPs connections. Defaults to system CAs."`
	Certfile           string `ini:"certfile" help:"Required if identity server requires client certificate"`
	Keyfile            string `ini:"keyfile" help:"Required if identity server requires client certificate"`
	Insecure           bool   `ini:"insecure" default:"false" help:"Verify HTTPS connections."`
}

// BarbicanClientOpts is the [barbican_client] group.
type BarbicanClientOpts struct {
	RegionName   string `ini:"region_name" help:"Region in Identity service catalog to use for communication with the OpenStack service."`
	EndpointType string `ini:"endpoint_type" default:"publicURL" help:"Type of endpoint in Identity service catalog to use for communication with the OpenStack service."`
}

// OsloReportsOpts is the [oslo_reports] group: where the Guru Meditation
// Report goes (package gurumeditation). Magnum's Python conductor does not
// pass its configuration to oslo.reports, so it ignores this group and
// always reports on SIGUSR2 to stderr; this conductor honours it.
type OsloReportsOpts struct {
	LogDir                   string        `ini:"log_dir" help:"Path to a log directory where to create a file"`
	FileEventHandler         string        `ini:"file_event_handler" help:"The path to a file to watch for changes to trigger the reports, instead of signals. Setting this option disables the signal trigger for the reports. If application is running as a WSGI application it is recommended to use this instead of signals."`
	FileEventHandlerInterval time.Duration `ini:"file_event_handler_interval" unit:"s" default:"1" help:"How many seconds to wait between polls when file_event_handler is set"`
}

// AuditOpts is the [audit] group (pycadf's identifier namespace).
type AuditOpts struct {
	Namespace string `ini:"namespace" default:"openstack" help:"namespace prefix for generated id"`
}
