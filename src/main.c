/*
 * src/main.c -- the apsearch command-line tool.  All the logic is Lua
 * (lua/apsearch/cli.lua) run by the host in src/lua/host.c.
 */
#include "lua/host.h"

int main(int argc, char **argv)
{
    return aps_host_main(argc, argv);
}
