/*
 * examples/embed/embed.c -- a program that embeds the apsearch engine
 * (include/apsearch/engine.h, libapsearch).
 *
 *   embed POLICY.lua [KEY=VALUE ...]
 *
 * Loads the policy, applies each KEY=VALUE as an override (like
 * `apsearch run --set`), runs the search and prints the best strategy's
 * step time, the number of strategies in the top-k and the result as a
 * table.  Exit status as the CLI: 0 ok, 1 no feasible strategy, 2 error.
 *
 * Build against an installed apsearch:
 *   cc embed.c $(pkg-config --cflags --libs apsearch) -o embed
 * (examples/embed/CMakeLists.txt does the same with CMake).
 */
#include <stdio.h>

#include <apsearch/engine.h>

int main(int argc, char **argv)
{
    char err[1024];
    aps_engine *e = NULL;
    const char *table = NULL;
    aps_engine_status rc;
    int code = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s POLICY.lua [KEY=VALUE ...]\n", argv[0]);
        return 2;
    }
    rc = aps_engine_open(&e, NULL, err, sizeof err);
    if (rc != APS_ENGINE_OK) {
        fprintf(stderr, "embed: %s (%s)\n", err, aps_engine_status_name(rc));
        return 2;
    }
    rc = aps_engine_load_policy_file(e, argv[1]);
    for (int i = 2; rc == APS_ENGINE_OK && i < argc; i++)
        rc = aps_engine_set(e, argv[i]);
    if (rc == APS_ENGINE_OK)
        rc = aps_engine_run(e);
    if (rc == APS_ENGINE_OK)
        rc = aps_engine_render(e, "table", &table);
    if (rc != APS_ENGINE_OK) {
        fprintf(stderr, "embed: %s (%s)\n", aps_engine_errmsg(e),
                aps_engine_status_name(rc));
        aps_engine_close(e);
        return 2;
    }
    if (aps_engine_top_k_count(e) > 0) {
        printf("best step time: %.4f s; %d strategies in the top-k, "
               "%lld feasible\n",
               aps_engine_best_step_time(e), aps_engine_top_k_count(e),
               aps_engine_feasible_count(e));
    } else {
        printf("no feasible strategy\n");
        code = 1;
    }
    fputs(table, stdout);
    aps_engine_close(e);
    return code;
}
