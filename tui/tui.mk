# tui.mk: the full-screen terminal app (tui/, themes/), linked into vmux.
TUI_LIBS := $(shell pkg-config --libs vterm ncursesw libuv 2>/dev/null || \
              echo -lvterm -lncursesw -luv)

# Pure parts, unit-tested without a terminal.
TUI_PURE_SRCS := tui/sb.c tui/search.c tui/colour.c tui/keyname.c \
                 tui/layout.c tui/config.c tui/theme.c tui/cell.c \
                 tui/textview.c tui/faint.c tui/screen.c \
                 $(BUILD)/gen/themes.c
# The running TUI: loop, panes, drawing, keys, dialogs, jobs.
TUI_SRCS := $(TUI_PURE_SRCS) tui/tui.c tui/pane.c tui/local.c tui/console.c tui/replay.c tui/model.c tui/hosts.c \
            tui/strike.c tui/shell.c \
            tui/work.c tui/draw.c tui/grid.c tui/input.c tui/cmds.c \
            tui/prompt.c tui/menu.c tui/copy.c tui/jobs.c

# Colour mapping, cell conversion, layout, the output view.
UNIT_TESTS += tui_view
UNIT_tui_view_SRCS := tests/unit/test_tui_view.c tui/colour.c tui/cell.c \
                      tui/layout.c tui/textview.c tui/faint.c
UNIT_tui_view_LIBS := $(TUI_LIBS)

# Built-in themes, embedded from themes/*.theme (generated, not committed).
THEME_FILES := $(sort $(wildcard themes/*.theme))
$(BUILD)/gen/themes.c: $(THEME_FILES) scripts/embed-themes
	@mkdir -p $(@D)
	$(if $(V),,@echo "  GEN     $@")
	$(Q)scripts/embed-themes $@ $(THEME_FILES)

# The screen under libvterm's state, compared with libvterm's own.
UNIT_TESTS += tui_screen
UNIT_tui_screen_SRCS := tests/unit/test_tui_screen.c tui/screen.c tui/faint.c
UNIT_tui_screen_LIBS := $(TUI_LIBS)

# A guest's output through faint.c and the screen, with resizes (libFuzzer).
FUZZ_fuzz_screen_SRCS := tui/screen.c tui/faint.c
FUZZ_fuzz_screen_LIBS := $(TUI_LIBS)

# Scrollback storage and copy mode's search.
UNIT_TESTS += tui_sb
UNIT_tui_sb_SRCS := tests/unit/test_tui_sb.c tui/sb.c tui/search.c
UNIT_tui_sb_LIBS := $(TUI_LIBS)

# Configuration, themes and key names.
UNIT_TESTS += tui_config
UNIT_tui_config_SRCS := tests/unit/test_tui_config.c tui/config.c \
                        tui/theme.c tui/keyname.c tui/colour.c \
                        session/labels.c session/options.c \
                        $(BUILD)/gen/themes.c
UNIT_tui_config_LIBS := $(TUI_LIBS) $(SESSION_LIBS)
