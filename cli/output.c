/*
 * output.c: what a command leaves for a script: with --json, exactly one
 * JSON document on stdout.
 *
 * main() switches JSON mode on for a command run with --json
 * (cli_output_start). The command
 * hands its result object to cli_result() instead of printing it, and
 * cli_error() hands its message here instead of writing stderr; when the
 * command returns, cli_output_finish() prints the result, or
 * {"error": MESSAGE, "exit_code": N} if it failed. Without --json nothing
 * is kept: results are dropped (the command printed its table) and errors
 * go to stderr as always. Notices (not errors) are dropped under --json so
 * stderr stays empty too.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

/* The running command's output state (one command per process). */
static struct {
	int json;
	int compact; /* the document on one line (exec --json-lines) */
	cJSON *result;
	char *error; /* every error so far, "; "-joined */
} output;

/* Does command e have a --json option? */
static int
entry_has_json(const struct cmd_entry *e)
{
	const struct cmd_opt *o;

	for (o = e->opts; o != NULL && o->name != NULL; o++) {
		if (strcmp(o->name, "json") == 0)
			return 1;
	}
	return 0;
}

/*
 * Set JSON mode for command e about to run with the parsed a, or, when its
 * command line did not parse (a NULL), if "--json" comes before any "--"
 * in argv: so even a usage error is reported as JSON.
 */
void
cli_output_start(
    const struct cmd_entry *e, const struct args *a, int argc, char **argv)
{
	output.json = 0;
	if (!entry_has_json(e))
		return;
	if (a != NULL) {
		output.json = args_has(a, "json");
		return;
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return;
		if (strcmp(argv[i], "--json") == 0) {
			output.json = 1;
			return;
		}
	}
}

/* Is the command running with --json? */
int
cli_json(void)
{
	return output.json;
}

/* The command's result; taken over (dropped without --json). */
void
cli_result(cJSON *result)
{
	if (!output.json) {
		cJSON_Delete(result);
		return;
	}
	cJSON_Delete(output.result);
	output.result = result;
}

/* Print the --json document on one line: it ends a stream of lines. */
void
cli_json_compact(void)
{
	output.compact = 1;
}

/* Under --json keep an error message for the final document: 1; else 0. */
int
cli_output_error(const char *msg)
{
	char *s;

	if (!output.json)
		return 0;
	if (output.error == NULL)
		output.error = xstrdup(msg);
	else {
		xasprintf(&s, "%s; %s", output.error, msg);
		free(output.error);
		output.error = s;
	}
	return 1;
}

/* A notice on stderr, dropped under --json. */
void
cli_notice(const char *msg)
{
	if (!output.json)
		cli_error("%s", msg);
}

/* cli_notice with a format. */
void
cli_noticef(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	cli_notice(s);
	free(s);
}

/*
 * The command returned rc: under --json print its one document to f: the
 * result it gave (whatever rc is: `vmux exec` passes the guest's status
 * on), or {"error", "exit_code"} if it reported an error. A command that
 * gave neither printed its own. Returns the exit status, EXIT_VMUX if f
 * could not be written.
 */
int
cli_output_finish(FILE *f, int rc)
{
	cJSON *doc = NULL;

	if (output.json && output.error != NULL) {
		if (rc == 0)
			rc = EXIT_VMUX; /* an error is never a success */
		doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "error", output.error);
		cJSON_AddNumberToObject(doc, "exit_code", rc);
	} else if (output.json && output.result != NULL) {
		doc = output.result;
		output.result = NULL;
	}
	if (doc != NULL) {
		cli_json_print(f, doc, !output.compact);
		cJSON_Delete(doc);
	}
	cJSON_Delete(output.result);
	output.result = NULL;
	free(output.error);
	output.error = NULL;
	if (fflush(f) != 0 && rc == 0)
		rc = EXIT_VMUX;
	return rc;
}
