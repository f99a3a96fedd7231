/*
Package oslo is the conductor's oslo.messaging transport on RabbitMQ.

# Server

	disp := oslo.NewDispatcher()
	err := disp.Handle("cluster_delete", oslo.Method(func(ctx context.Context, a struct {
		UUID string `json:"uuid"`
	}) (any, error) {
		rc := request.From(ctx) // the caller's context, rebuilt from _context_*
		...
		return nil, exception.ClusterNotFound(a.UUID)
	}))
	srv, err := oslo.NewServer(opts, oslo.ServerOptions{GracePeriod: 60 * time.Second},
		oslo.Target{Topic: "magnum-conductor"}, disp, log)
	err = srv.Start(ctx)     // declares exactly what oslo declares, consumes, reconnects by itself
	...
	err = srv.Stop(shutdownCtx) // stop consuming, delete own fanout queue, finish in-flight, close

A call is acknowledged when a worker takes it, a cast once its method has
returned (at least once: a server killed meanwhile leaves it to another);
ServerOptions.RetryCast returns to the queue the casts that could not be
done for now, ServerOptions.TranslateError decides what an error becomes
for the caller. A request larger than max_message_size is never read (a
call gets InvalidParameterValue). After a lost connection the listener
dials again at once; Stop returns by its deadline whatever is pending.

Method arguments are a struct whose json tags name the keyword arguments
(",omitempty" or `oslo:"optional"` for Python defaults); object arguments
are json.RawMessage. Results must be JSON-marshalable. Errors become
failures Python rebuilds: *exception.Error keeps its module and class, any
other error is MagnumException (500).

# Client

	c, err := oslo.NewClient(opts, log)
	res, err := c.Call(ctx, oslo.Target{Topic: "magnum-conductor"}, "ping_conductor", nil)
	err = c.Cast(ctx, oslo.Target{Topic: "magnum-conductor"}, "cluster_delete", map[string]any{"uuid": id})

A failure reply is returned as *exception.Error (remote module, class,
message, kwargs, code); no reply in time as *oslo.TimeoutError.

The reply queue is declared exactly as oslo declares it, but consumed
without acknowledgements (oslo's consumer acks each reply): a reply only
matters to the process that waits for it, so a broker redelivery could only
reach a process that is gone. No peer sees the difference.

# Notifier

	n, err := oslo.NewNotifier(opts, log) // [oslo_messaging_notifications] driver/topics/transport_url
	err = n.Notify(ctx, "INFO", "magnum.cluster.create", cadfPayload)
*/
package oslo
