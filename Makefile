# make install PREFIX=/usr/local [DESTDIR=/tmp/stage]
#
# A release build with the Swift runtime linked in (--static-swift-stdlib): the installed binary runs on a machine
# without the Swift toolchain, with glibc 2.34 or later (it needs the C library only: libinotifytools and the C++
# runtime are linked in). Installs:
#   PREFIX/bin/cachewarden
#   PREFIX/share/man/man1/cachewarden.1                     (from the commands' definitions: `cachewarden manual`)
#   PREFIX/share/man/man5/cachewarden.conf.5                (from the parser's key table: `cachewarden keys`)
#   PREFIX/share/bash-completion/completions/cachewarden
#   PREFIX/share/zsh/site-functions/_cachewarden
#   PREFIX/share/fish/vendor_completions.d/cachewarden.fish
#   PREFIX/lib/systemd/system/cachewarden.service           (ExecStart= pointing at PREFIX/bin)
#   PREFIX/lib/systemd/user/cachewarden.service             (the per-user unit, `systemctl --user`; the same)
# The build has a folder of its own (SCRATCH), so it never waits on a `swift build` or `swift test` in .build.

PREFIX ?= /usr/local
DESTDIR ?=
SCRATCH ?= .build-install
SWIFT ?= swift
INSTALL ?= install

BIN := $(SCRATCH)/release/cachewarden
OUT := $(SCRATCH)/share
ROOT := $(DESTDIR)$(PREFIX)

.PHONY: all build bench man completions install install-strip uninstall clean deb dist rpm check-repro check-chroot

all: build man completions

# The installed binary's link (issue 19: size, idle memory and start-up time; docs/performance.md has the figures;
# issue 31: a glibc floor of 2.34 and nothing but the C library at run time; docs/install.md):
#  --no-export-dynamic: the toolchain's static-stdlib link options export every symbol of the package's own
#    objects to the dynamic symbol table (0.8 MB of it); nothing looks them up at run time (no dlsym, no Foundation).
#  lld, without -z pack-relative-relocs: DT_RELR shrank the 0.7 MB table of relative relocations to 6 KB, but the
#    binary then needs the symbol version GLIBC_ABI_DT_RELR (glibc >= 2.36), which Ubuntu 22.04 (2.35) and RHEL 9
#    (2.34) lack. What the floor costs (idle RSS, `--version` time) is in docs/performance.md.
#  --wrap=hypotf: the Swift runtime's Glibc overlay calls hypotf, which binds to hypotf@GLIBC_2.35, the only symbol
#    above 2.34 in the binary. The wrap sends the call to __wrap_hypotf (Sources/CWardenShims/GlibcFloor.c), which
#    a .symver directive binds to hypotf@GLIBC_2.2.5, the version every glibc has. .ci/check-portable.sh fails CI
#    on any version above GLIBC_2.34 (libpthread's merge into libc: 25 symbols need 2.34 whatever we do).
#  -L packaging/link: its libstdc++.so and libinotifytools.so are linker scripts naming libstdc++.a and
#    libinotifytools.a (libinotifytools0-dev), so the -lstdc++ of the toolchain's options and the -linotifytools of
#    Package.swift's CInotify target link archives: the C++ runtime that the Swift runtime needs is linked in (as
#    the Swift runtime itself is) instead of loaded, so the loader no longer binds libstdc++.so's symbols at every
#    start (a third of a Swift hello world's start-up) nor maps its 1 MB; and the binary runs where libinotifytools0
#    is not installed. GCC's runtime library exception allows the first. The debug build and the tests keep
#    linking libinotifytools.so (they do not pass this folder).
#  --disable-local-rpath (SwiftPM): no RUNPATH $ORIGIN, which a binary needing no library of its own has no use for
#    (a library dropped next to it would be loaded; rpmlint counts it an error).
LINK := --disable-local-rpath -Xlinker --no-export-dynamic -Xswiftc -use-ld=lld -Xlinker --wrap=hypotf \
	-Xlinker -L$(CURDIR)/packaging/link

# Reproducible builds (`make check-repro`): the checkout's path appears only in the debug information (and so in
# the build ID, a hash of the whole file, which survives `strip`); mapped to "." the binary is the same whatever
# folder it was built in. The Swift compiler's -file-prefix-map covers its debug info and the clang importer; the
# -Xcc one covers the C targets (CInotify, CFanotify, CWardenShims). The frontend's -no-clang-module-breadcrumbs: the
# debug info also named each imported C module's precompiled copy, ModuleCache/<hash>/CInotify-<hash>.pcm, whose
# hashes come from the compiler's arguments and so from the folder, and the Swift compiler's per-object module hash
# (.swift_modhash, an MD5 of the object's LLVM IR) changed with them. Those names only let a debugger on the build
# machine reuse those files. What still differs, each object's .swift_modhash (a hash of its LLVM module that the
# compiler writes and nothing reads at run time) and so the build ID, is normalised in the installed copy by
# `make install` (packaging/normalize-binary.sh): every artifact is made from that copy.
REPRO := -Xswiftc -file-prefix-map -Xswiftc $(CURDIR)=. -Xcc -ffile-prefix-map=$(CURDIR)=. \
	-Xswiftc -Xfrontend -Xswiftc -no-clang-module-breadcrumbs

build:
	$(SWIFT) build --scratch-path $(SCRATCH) -c release --static-swift-stdlib --product cachewarden $(LINK) $(REPRO)

# The benchmark, with the same flags in the same folder: the release library is compiled once for both.
bench: build
	$(SWIFT) build --scratch-path $(SCRATCH) -c release --static-swift-stdlib --product cachewarden-bench $(LINK) $(REPRO)

# cachewarden(1) from the commands' own descriptions, cachewarden.conf(5) from the parser's key table.
man: build
	mkdir -p $(OUT)/man
	$(BIN) manual > $(OUT)/man/cachewarden.1
	$(BIN) keys --format man > $(OUT)/man/cachewarden.conf.5

completions: build
	mkdir -p $(OUT)/completions
	$(BIN) --generate-completion-script bash > $(OUT)/completions/cachewarden.bash
	$(BIN) --generate-completion-script zsh > $(OUT)/completions/_cachewarden
	$(BIN) --generate-completion-script fish > $(OUT)/completions/cachewarden.fish

install: all
	$(INSTALL) -d $(ROOT)/bin $(ROOT)/share/man/man1 $(ROOT)/share/man/man5 $(ROOT)/share/bash-completion/completions \
		$(ROOT)/share/zsh/site-functions $(ROOT)/share/fish/vendor_completions.d $(ROOT)/lib/systemd/system \
		$(ROOT)/lib/systemd/user
	$(INSTALL) -m 0755 $(BIN) $(ROOT)/bin/cachewarden
	bash packaging/normalize-binary.sh $(ROOT)/bin/cachewarden
	$(INSTALL) -m 0644 $(OUT)/man/cachewarden.1 $(ROOT)/share/man/man1/cachewarden.1
	$(INSTALL) -m 0644 $(OUT)/man/cachewarden.conf.5 $(ROOT)/share/man/man5/cachewarden.conf.5
	$(INSTALL) -m 0644 $(OUT)/completions/cachewarden.bash $(ROOT)/share/bash-completion/completions/cachewarden
	$(INSTALL) -m 0644 $(OUT)/completions/_cachewarden $(ROOT)/share/zsh/site-functions/_cachewarden
	$(INSTALL) -m 0644 $(OUT)/completions/cachewarden.fish $(ROOT)/share/fish/vendor_completions.d/cachewarden.fish
	sed 's|/usr/local/bin/cachewarden|$(PREFIX)/bin/cachewarden|g' Examples/systemd/cachewarden.service \
		> $(ROOT)/lib/systemd/system/cachewarden.service
	chmod 0644 $(ROOT)/lib/systemd/system/cachewarden.service
	sed 's|/usr/local/bin/cachewarden|$(PREFIX)/bin/cachewarden|g' Examples/systemd/user/cachewarden.service \
		> $(ROOT)/lib/systemd/user/cachewarden.service
	chmod 0644 $(ROOT)/lib/systemd/user/cachewarden.service

# The binary without its symbol tables (24 MB -> 10 MB); `install` leaves stripping to packagers (dh_strip).
install-strip: install
	strip $(ROOT)/bin/cachewarden

uninstall:
	rm -f $(ROOT)/bin/cachewarden $(ROOT)/share/man/man1/cachewarden.1 $(ROOT)/share/man/man5/cachewarden.conf.5 \
		$(ROOT)/share/bash-completion/completions/cachewarden $(ROOT)/share/zsh/site-functions/_cachewarden \
		$(ROOT)/share/fish/vendor_completions.d/cachewarden.fish $(ROOT)/lib/systemd/system/cachewarden.service \
		$(ROOT)/lib/systemd/user/cachewarden.service

# --one-file-system: never through a mount point (make check-chroot keeps a Debian tree in $(SCRATCH)/chroot; it
# mounts nothing there outside a mount namespace of its own, but a hand-made chroot might).
clean:
	rm -rf --one-file-system $(SCRATCH) dist

# The release artifacts: make deb, make rpm, make dist (docs/install.md says which systems each serves and how that
# was checked). The version is the one `cachewarden --version` prints.
VERSION := $(shell sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/CacheWarden/API/CacheWardenVersion.swift)
# Every timestamp in them is the commit's (https://reproducible-builds.org/specs/source-date-epoch/): dpkg-deb clamps
# file times to it and stamps its ar members with it, rpmbuild uses it for the build time and file times, tar gets it
# as --mtime. Exported for those tools.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
export SOURCE_DATE_EPOCH
# Who builds the packages, and the project's home: set them for a real release (make deb DEB_MAINTAINER="Name <mail>").
DEB_MAINTAINER ?= The CacheWarden authors <cachewarden@example.org>
DEB_HOMEPAGE ?= https://github.com/your-org/CacheWarden
# What the binary contains besides CacheWarden's own code, for the packages' licence fields: libinotifytools.a (LINK).
INOTIFYTOOLS_COPYRIGHT := /usr/share/doc/libinotifytools0-dev/copyright

# make deb: cachewarden_<version>_<arch>.deb in the checkout, from `make install PREFIX=/usr` into a staged tree
# packed by `dpkg-deb --build --root-owner-group`. Not dpkg-buildpackage from a debian/ source package: the build
# needs the Swift toolchain, which Debian does not package, so such a source package could not build on a Debian
# builder anyway; the staged tree reuses the tested `make install`.
#  Depends: computed from the binary by dpkg-shlibdeps (it wants a debian/control, hence the one in DEBSCRATCH):
#    libc6 (>= 2.34) and libgcc-s1, from the symbols the binary imports (LINK keeps them at 2.34 or below, and no
#    longer asks for DT_RELR, which dpkg-shlibdeps did not see and the Makefile once raised libc6 to 2.36 for).
#  Built-Using: the source package of libinotifytools.a, which is linked in (Debian Policy 7.8, for a statically
#    linked library whose licence asks for its source to be available).
#  Reproducible (make check-repro): dpkg-deb takes SOURCE_DATE_EPOCH; Installed-Size is the sum of the files' sizes
#    in KiB, each rounded up, plus one per folder (as dpkg-gencontrol counts), not du's block count, which depends
#    on the filesystem; folders are 0755 whatever the umask.
# lintian: no error, no warning (the bash completion loses its #! line, which lintian flags in a sourced file).
# Accepted info tags (`lintian -I`): hardening-no-bindnow / hardening-no-fortify-functions (swiftc's static-stdlib
# link, not dpkg-buildflags), spelling-error-in-binary (fragments of the linked-in Swift runtime's strings),
# systemd-service-file-missing-documentation-key and package-supports-alternative-init-but-no-init.d-script
# (systemd only, by design).
# The tree both packages hold, staged under $(1): `make install PREFIX=/usr`, the binary stripped (the .comment and
# .note sections too: the toolchains' version strings), the man pages gzipped without name or time, the bash
# completion without its #! line (it is sourced; lintian flags it), and the config, which watches nothing.
define stage-usr
	$(MAKE) install PREFIX=/usr DESTDIR=$(CURDIR)/$(1)
	strip --remove-section=.comment --remove-section=.note $(1)/usr/bin/cachewarden
	gzip -9n $(1)/usr/share/man/man1/cachewarden.1 $(1)/usr/share/man/man5/cachewarden.conf.5
	sed -i '1{/^#!/d}' $(1)/usr/share/bash-completion/completions/cachewarden
	$(INSTALL) -d $(1)/etc/cachewarden
	$(INSTALL) -m 0644 packaging/cachewarden.conf $(1)/etc/cachewarden/cachewarden.conf
endef

DEB_VERSION ?= $(VERSION)
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB := cachewarden_$(DEB_VERSION)_$(DEB_ARCH).deb
DEBSCRATCH := $(SCRATCH)/deb
DEBROOT := $(DEBSCRATCH)/root

deb: all
	rm -rf $(DEBSCRATCH) && mkdir -p $(DEBROOT)/DEBIAN $(DEBSCRATCH)/debian
	$(call stage-usr,$(DEBROOT))
	$(INSTALL) -d $(DEBROOT)/usr/share/doc/cachewarden
	$(INSTALL) -m 0644 packaging/copyright $(DEBROOT)/usr/share/doc/cachewarden/copyright
	sed 's/@VERSION@/$(DEB_VERSION)/' packaging/changelog | gzip -9n > $(DEBROOT)/usr/share/doc/cachewarden/changelog.gz
	chmod 0644 $(DEBROOT)/usr/share/doc/cachewarden/changelog.gz
	$(INSTALL) -m 0755 packaging/postinst packaging/postrm $(DEBROOT)/DEBIAN/
	echo /etc/cachewarden/cachewarden.conf > $(DEBROOT)/DEBIAN/conffiles
	find $(DEBROOT) -type d -exec chmod 0755 {} +
	cd $(DEBROOT) && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum > DEBIAN/md5sums
	printf 'Source: cachewarden\n\nPackage: cachewarden\nArchitecture: any\n' > $(DEBSCRATCH)/debian/control
	cd $(DEBSCRATCH) && dpkg-shlibdeps -O -eroot/usr/bin/cachewarden > shlibs.txt
	{ echo "Package: cachewarden"; echo "Version: $(DEB_VERSION)"; echo "Architecture: $(DEB_ARCH)"; \
	  echo "Maintainer: $(DEB_MAINTAINER)"; \
	  echo "Installed-Size: $$(cd $(DEBROOT) && find . -path ./DEBIAN -prune -o -printf '%y %s\n' | \
	    awk '{ n += $$1 == "f" ? int(($$2 + 1023) / 1024) : 1 } END { print n }')"; \
	  echo "Depends: $$(sed -n 's/^shlibs:Depends=//p' $(DEBSCRATCH)/shlibs.txt)"; \
	  echo "Built-Using: $$(dpkg-query -W -f='$${source:Package} (= $${source:Version})' libinotifytools0-dev)"; \
	  echo "Section: admin"; echo "Priority: optional"; echo "Homepage: $(DEB_HOMEPAGE)"; \
	  echo "Description: keeps cache directories under a size quota"; \
	  echo " CacheWarden watches cache directories with inotify and deletes their oldest"; \
	  echo " files when a directory grows past its quota or its files past a maximum age."; \
	  echo " It runs as a daemon (systemd system and user units are included) or as a"; \
	  echo " one-shot CLI (discover, check, trim, clear, status, events). discover"; \
	  echo " finds the caches of a home (pip, uv, Go, ccache, npm, cargo, ...) and"; \
	  echo " proposes a config."; \
	  echo " ."; \
	  echo " The shipped /etc/cachewarden/cachewarden.conf watches nothing until edited,"; \
	  echo " and the service is neither enabled nor started on install."; \
	} > $(DEBROOT)/DEBIAN/control
	dpkg-deb --build --root-owner-group $(DEBROOT) $(DEB)

# make rpm: cachewarden-<version>-<release>.<arch>.rpm in the checkout, by `rpmbuild -bb packaging/cachewarden.spec`,
# whose %install copies a tree staged by `make install PREFIX=/usr` (as `make deb` does, and for the same reason: an
# RPM builder has no Swift toolchain either). Builds on Debian with its `rpm` package, which has rpmbuild but not
# systemd's RPM macros (%systemd_post, %_unitdir): the spec writes the scriptlets out. Requires: from rpm's own ELF
# dependency generator (libc.so.6(GLIBC_2.34)(64bit) at most). The binary is stripped and the man pages gzipped here
# (as Fedora's brp-strip and brp-compress would; Debian's brp-compress fails under dash), so the spec turns rpm's
# post-install scripts off. rpmlint -c packaging/rpmlint.toml: no error; its warnings are listed in that file.
# The build time, the host name and file times come from SOURCE_DATE_EPOCH, so the package is reproducible too.
RPM_RELEASE ?= 1
RPM_ARCH := $(shell uname -m)
RPM := cachewarden-$(VERSION)-$(RPM_RELEASE).$(RPM_ARCH).rpm
RPMSCRATCH := $(SCRATCH)/rpm

rpm: all
	rm -rf $(RPMSCRATCH) && mkdir -p $(RPMSCRATCH)/stage $(RPMSCRATCH)/top
	$(call stage-usr,$(RPMSCRATCH)/stage)
	$(INSTALL) -d $(RPMSCRATCH)/stage/usr/share/licenses/cachewarden
	$(INSTALL) -m 0644 LICENSE $(RPMSCRATCH)/stage/usr/share/licenses/cachewarden/LICENSE
	$(INSTALL) -m 0644 $(INOTIFYTOOLS_COPYRIGHT) $(RPMSCRATCH)/stage/usr/share/licenses/cachewarden/LICENSE.libinotifytools
	rpmbuild -bb --quiet --define '_topdir $(CURDIR)/$(RPMSCRATCH)/top' \
		--define 'cw_stage $(CURDIR)/$(RPMSCRATCH)/stage' --define 'cw_version $(VERSION)' \
		--define 'cw_release $(RPM_RELEASE)' --define 'cw_url $(DEB_HOMEPAGE)' \
		--define 'cw_packager $(DEB_MAINTAINER)' \
		--define "cw_date $$(date -u -d @$(SOURCE_DATE_EPOCH) '+%a %b %d %Y')" \
		--define '_buildhost reproducible' --define 'use_source_date_epoch_as_buildtime 1' \
		--define 'clamp_mtime_to_source_date_epoch 1' packaging/cachewarden.spec
	cp $(RPMSCRATCH)/top/RPMS/$(RPM_ARCH)/$(RPM) $(RPM)

# make dist: dist/cachewarden-<version>-linux-<arch>.tar.gz and dist/SHA256SUMS, for any Linux with glibc 2.34 or
# later. The tarball holds one folder, laid out as under /usr/local: bin/cachewarden (stripped), the two man pages,
# the bash, zsh and fish completions, both systemd units (ExecStart= in /usr/local/bin; install.sh rewrites it for
# another PREFIX), etc/cachewarden/cachewarden.conf (the packages' config, which watches nothing), LICENSE,
# LICENSE.libinotifytools (linked in), INSTALL and install.sh (PREFIX, DESTDIR, --uninstall; packaging/dist/).
# Reproducible: entries sorted by name, owned by 0:0, dated SOURCE_DATE_EPOCH, modes normalised, GNU format (no pax
# headers with access times), gzip -n (no name or time in its header).
DIST_ARCH := $(shell uname -m)
DISTNAME := cachewarden-$(VERSION)-linux-$(DIST_ARCH)
DISTSCRATCH := $(SCRATCH)/dist
DISTTREE := $(DISTSCRATCH)/$(DISTNAME)
TARBALL := dist/$(DISTNAME).tar.gz

dist: all
	@[ -n "$(SOURCE_DATE_EPOCH)" ] || { echo "make dist: SOURCE_DATE_EPOCH is unset (not a git checkout?)" >&2; exit 2; }
	rm -rf $(DISTSCRATCH) && mkdir -p $(DISTSCRATCH) dist
	$(MAKE) install PREFIX=/usr/local DESTDIR=$(CURDIR)/$(DISTSCRATCH)/stage
	mv $(DISTSCRATCH)/stage/usr/local $(DISTTREE)
	strip --remove-section=.comment --remove-section=.note $(DISTTREE)/bin/cachewarden
	$(INSTALL) -d $(DISTTREE)/etc/cachewarden
	$(INSTALL) -m 0644 packaging/cachewarden.conf $(DISTTREE)/etc/cachewarden/cachewarden.conf
	$(INSTALL) -m 0644 LICENSE $(DISTTREE)/LICENSE
	$(INSTALL) -m 0644 $(INOTIFYTOOLS_COPYRIGHT) $(DISTTREE)/LICENSE.libinotifytools
	sed -e 's/@VERSION@/$(VERSION)/' -e 's/@ARCH@/$(DIST_ARCH)/' packaging/dist/INSTALL > $(DISTTREE)/INSTALL
	$(INSTALL) -m 0755 packaging/dist/install.sh $(DISTTREE)/install.sh
	LC_ALL=C tar --create --file=- --directory=$(DISTSCRATCH) --sort=name --format=gnu \
		--mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner --mode=u+w,go-w,a+rX $(DISTNAME) \
		| gzip -9n > $(TARBALL).tmp
	mv $(TARBALL).tmp $(TARBALL)
	cd dist && sha256sum $(DISTNAME).tar.gz > SHA256SUMS
	@echo "make dist: $(TARBALL) $$(stat -c %s $(TARBALL)) bytes, sha256 $$(cut -c1-16 dist/SHA256SUMS)..."

# make check-repro: the commit built twice, here and in a fresh clone in another folder, gives the same tarball,
# binary, .deb and .rpm, byte for byte (.ci/check-repro.sh; a release build of its own, minutes).
check-repro:
	bash .ci/check-repro.sh

# make check-chroot: the tarball's binary, alone in a Debian 12 chroot without libinotifytools0 (debootstrap
# --variant=minbase, cached in $(SCRATCH)/chroot), trims a folder over its quota; install.sh installs and
# uninstalls there, leaving nothing behind (.ci/check-chroot.sh; needs root and Debian's archive).
check-chroot: dist
	bash .ci/check-chroot.sh $(TARBALL) $(SCRATCH)/chroot
