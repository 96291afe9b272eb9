# web.mk: vmux web (web/): its server is linked into vmux (cli/cli.mk), its
# pages and xterm.js are copied into $(BUILD)/web, where vmux finds them
# beside its binary (share/vmux/web when installed).
WEB_SRCS := web/grants.c web/server.c web/term.c web/attach.c web/wall.c
WEB_LIBS := -lcrypto

WEB_PAGES := $(patsubst web/page/%,$(BUILD)/web/%,$(wildcard web/page/*))
WEB_XTERM := $(BUILD)/web/xterm/xterm.js $(BUILD)/web/xterm/xterm.css \
             $(BUILD)/web/xterm/addon-fit.js
WEB_ASSETS := $(WEB_PAGES) $(WEB_XTERM)

# xterm.js, pinned by web/package-lock.json, installed with npm ci.
WEB_NODE_STAMP := web/node_modules/.package-lock.json
$(WEB_NODE_STAMP): web/package-lock.json web/package.json
	$(if $(V),,@echo "  NPM     web")
	$(Q)cd web && npm ci --no-audit --no-fund --no-update-notifier --loglevel=error >/dev/null
	$(Q)touch $@

$(BUILD)/web/%: web/page/%
	@mkdir -p $(@D)
	$(Q)cp $< $@
$(BUILD)/web/xterm/xterm.js: $(WEB_NODE_STAMP)
	@mkdir -p $(@D)
	$(Q)cp web/node_modules/@xterm/xterm/lib/xterm.js $@
$(BUILD)/web/xterm/xterm.css: $(WEB_NODE_STAMP)
	@mkdir -p $(@D)
	$(Q)cp web/node_modules/@xterm/xterm/css/xterm.css $@
$(BUILD)/web/xterm/addon-fit.js: $(WEB_NODE_STAMP)
	@mkdir -p $(@D)
	$(Q)cp web/node_modules/@xterm/addon-fit/lib/addon-fit.js $@

GUEST += $(WEB_ASSETS)

# Grants' tokens and hashes: pure, with OpenSSL.
UNIT_TESTS += web_grants
UNIT_web_grants_SRCS := tests/unit/test_web_grants.c web/grants.c
UNIT_web_grants_LIBS := -lcjson -lcrypto
