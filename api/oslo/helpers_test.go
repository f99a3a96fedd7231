package oslo

import (
	"errors"

	"github.com/openstack/magnum-conductor/api/exception"
)

func asRemoteTB(err error, target **RemoteTraceback) bool { return errors.As(err, target) }

func asError(err error, target **exception.Error) bool { return errors.As(err, target) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
