package exception

// Constructors for the classes the conductor raises most. Any other class is
// built with New.

// NotSupported is magnum.common.exception.NotSupported(operation=...).
func NotSupported(operation string) *Error {
	return ClassNotSupported.New(map[string]any{"operation": operation})
}

// NotSupportedMessage is NotSupported(message=...), as credential_rotate and
// the drivers raise it.
func NotSupportedMessage(message string) *Error {
	return ClassNotSupported.WithMessage(message, nil)
}

// ClusterNotFound is ClusterNotFound(cluster=ident).
func ClusterNotFound(ident any) *Error {
	return ClassClusterNotFound.New(map[string]any{"cluster": ident})
}

// ClusterTemplateNotFound is ClusterTemplateNotFound(clustertemplate=ident).
func ClusterTemplateNotFound(ident any) *Error {
	return ClassClusterTemplateNotFound.New(map[string]any{"clustertemplate": ident})
}

// NodeGroupNotFound is NodeGroupNotFound(nodegroup=ident).
func NodeGroupNotFound(ident any) *Error {
	return ClassNodeGroupNotFound.New(map[string]any{"nodegroup": ident})
}

// InvalidParameterValue is InvalidParameterValue(err=...).
func InvalidParameterValue(err string) *Error {
	return ClassInvalidParameterValue.New(map[string]any{"err": err})
}

// Conflict is Conflict(message) as the DB layer raises it for ambiguous
// names.
func Conflict(message string) *Error {
	return ClassConflict.WithMessage(message, nil)
}

// NotImplemented is builtins.NotImplementedError(message).
func NotImplemented(message string) *Error {
	return Builtin("NotImplementedError", message)
}
