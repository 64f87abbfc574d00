# make install PREFIX=/usr/local [DESTDIR=/tmp/stage]
#
# A release build with the Swift runtime linked in (--static-swift-stdlib): the installed binary runs on a machine
# without the Swift toolchain (it needs libinotifytools0 and the C library only). Installs:
#   PREFIX/bin/cachewarden
#   PREFIX/share/man/man1/cachewarden.1                     (from the argument-parser definitions)
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

.PHONY: all build man completions install install-strip uninstall clean

all: build man completions

# --no-export-dynamic: the toolchain's static-stdlib link options export every symbol of the package's own objects
# to the dynamic symbol table (0.8 MB of it); nothing looks them up at run time (no dlsym, no Foundation).
build:
	$(SWIFT) build --scratch-path $(SCRATCH) -c release --static-swift-stdlib --product cachewarden \
		-Xlinker --no-export-dynamic

# swift-argument-parser's generate-manual tool (what its GenerateManual plugin runs), on the installed binary.
man: build
	$(SWIFT) build --scratch-path $(SCRATCH) -c release --product generate-manual
	mkdir -p $(OUT)/man
	$(SCRATCH)/release/generate-manual $(BIN) --section 1 --output-directory $(OUT)/man
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

# The binary without its symbol tables (33 MB -> 16.5 MB); `install` leaves stripping to packagers (dh_strip).
install-strip: install
	strip $(ROOT)/bin/cachewarden

uninstall:
	rm -f $(ROOT)/bin/cachewarden $(ROOT)/share/man/man1/cachewarden.1 $(ROOT)/share/man/man5/cachewarden.conf.5 \
		$(ROOT)/share/bash-completion/completions/cachewarden $(ROOT)/share/zsh/site-functions/_cachewarden \
		$(ROOT)/share/fish/vendor_completions.d/cachewarden.fish $(ROOT)/lib/systemd/system/cachewarden.service \
		$(ROOT)/lib/systemd/user/cachewarden.service

clean:
	rm -rf $(SCRATCH)
