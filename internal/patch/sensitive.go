package patch

import "github.com/devspace-dev/devspace/internal/project"

// checkTarget refuses ph before anything is staged when it is repository
// metadata, as written or where it really leads inside the root (a .git
// element in any spelling, or a directory that is a Git directory whatever
// its name: project.DirResolver), whatever allow says; and, unless allow is
// set, when ph or its real path is one project.IsSensitive flags:
// "keys/config" is ".ssh/config" when keys is a symlink to .ssh. read_files
// applies the same rules. The last element is taken as written: Apply and
// Restore refuse a target that is itself a symlink. sensitive reports an
// allowed sensitive target: its content must stay out of every record.
func checkTarget(r *project.DirResolver, ph string, allow bool) (sensitive bool, err error) {
	real, err := r.Path(ph)
	if err != nil {
		// The root refuses the path as well, or it is repository
		// metadata; say why now rather than apply anything to it.
		return false, fileErr(ph, err)
	}
	sensitive = project.IsSensitive(ph) || project.IsSensitive(real)
	if sensitive && !allow {
		return true, &FileError{Path: ph, Err: &project.PathError{Reason: project.ReasonSensitive}}
	}
	return sensitive, nil
}

// markSensitive flags the results whose path (or origin) is in sensitive.
func markSensitive(res *Result, sensitive map[string]bool) {
	if len(sensitive) == 0 {
		return
	}
	for i := range res.Files {
		f := &res.Files[i]
		f.Sensitive = sensitive[f.Path] || f.MovedFrom != "" && sensitive[f.MovedFrom]
	}
}
