package patch

import "github.com/devspace-dev/devspace/internal/project"

// checkSensitive refuses ph unless allow is set when ph, or the path it
// really leads to inside the root (directory symlinks resolved by r), is
// one project.IsSensitive flags: "keys/config" is ".ssh/config" when keys
// is a symlink to .ssh. read_files applies the same rule. The last
// element is taken as written: Apply and Restore refuse a target that is
// itself a symlink.
func checkSensitive(r *project.DirResolver, ph string, allow bool) error {
	if allow {
		return nil
	}
	if project.IsSensitive(ph) {
		return &FileError{Path: ph, Err: &project.PathError{Reason: project.ReasonSensitive}}
	}
	real, err := r.Path(ph)
	if err != nil {
		// The root refuses the path as well; say why now rather than
		// apply anything to a path whose real name is unknown.
		return fileErr(ph, err)
	}
	if real != ph && project.IsSensitive(real) {
		return &FileError{Path: ph, Err: &project.PathError{Reason: project.ReasonSensitive}}
	}
	return nil
}
