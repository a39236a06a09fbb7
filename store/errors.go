package store

import (
	"gocloud.dev/gcerrors"
)

func isNotExist(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }
