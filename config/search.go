package config

import (
	"os"
	"path/filepath"
)

// DefaultFiles is oslo.config's find_config_files(project, prog): the files
// read when the command line has no --config-file. For each of
// <project>.conf and <prog>.conf, the first that exists in ~/.<project>/,
// ~/, /etc/<project>/, /etc/. For magnum-conductor that is normally
// /etc/magnum/magnum.conf.
func DefaultFiles(project, prog string) []string {
	return search(project, prog, ".conf")
}

// DefaultDirs is oslo.config's find_config_dirs: the same search for
// <project>.conf.d and <prog>.conf.d, read when the command line has no
// --config-dir (even when it has --config-file, as in oslo.config).
func DefaultDirs(project, prog string) []string {
	return search(project, prog, ".conf.d")
}

func search(project, prog, ext string) []string {
	var dirs []string
	home, err := os.UserHomeDir()
	if err == nil && project != "" {
		dirs = append(dirs, filepath.Join(home, "."+project))
	}
	if err == nil {
		dirs = append(dirs, home)
	}
	if project != "" {
		dirs = append(dirs, filepath.Join("/etc", project))
	}
	dirs = append(dirs, "/etc")
	var found []string
	for _, name := range []string{project, prog} {
		if name == "" {
			continue
		}
		for _, d := range dirs {
			p := filepath.Join(d, name+ext)
			if _, err := os.Stat(p); err == nil {
				found = append(found, p)
				break
			}
		}
	}
	return found
}
