# The layers of flockd's code, lowest first, and what each may use: the
# architecture map of README.md as data. server/CMakeLists.txt builds one
# library per folder from it (exporting only that folder's headers,
# linking only the layers it names) and fences.cmake fails the build on
# an include that runs the wrong way.
#
# FLOCKD_LAYER_<name>_DIR    the folder, from the top of the source tree
# FLOCKD_LAYER_<name>_USES   the layers whose headers it may include; a
#                            "layer/header.h" item allows that one header only
# FLOCKD_LAYER_<name>_SYSTEM the restricted system headers it may include
#                            (prefixes of FLOCKD_RESTRICTED_HEADERS); every
#                            other layer must not
#
# A layer may use what a layer it uses uses: the list names everything it
# includes itself.

set(FLOCKD_LAYERS base sim proto config stream runtime store script room lobby cluster net app bench cli)

# Headers of libraries only some layers may reach.
set(FLOCKD_RESTRICTED_HEADERS libwebsockets.h nats/ cjson/ ev.h openssl/ zlib.h lua.h lauxlib.h
                               lualib.h)

set(FLOCKD_LAYER_base_DIR server/base)
set(FLOCKD_LAYER_base_USES "")

set(FLOCKD_LAYER_sim_DIR server/sim)
set(FLOCKD_LAYER_sim_USES base/bytes.h)

set(FLOCKD_LAYER_proto_DIR proto)
set(FLOCKD_LAYER_proto_USES base/bytes.h sim/params.h)
set(FLOCKD_LAYER_proto_SYSTEM cjson/ zlib.h)

set(FLOCKD_LAYER_config_DIR server/config)
set(FLOCKD_LAYER_config_USES base sim proto)
set(FLOCKD_LAYER_config_SYSTEM cjson/)

set(FLOCKD_LAYER_stream_DIR server/stream)
set(FLOCKD_LAYER_stream_USES base sim proto)

set(FLOCKD_LAYER_runtime_DIR server/runtime)
set(FLOCKD_LAYER_runtime_USES base sim proto stream)

set(FLOCKD_LAYER_store_DIR server/store)
set(FLOCKD_LAYER_store_USES base sim proto)
set(FLOCKD_LAYER_store_SYSTEM zlib.h)

set(FLOCKD_LAYER_script_DIR server/script)
set(FLOCKD_LAYER_script_USES base sim proto)
set(FLOCKD_LAYER_script_SYSTEM lua.h lauxlib.h lualib.h cjson/)

set(FLOCKD_LAYER_room_DIR server/room)
set(FLOCKD_LAYER_room_USES base sim proto stream runtime store script)

set(FLOCKD_LAYER_lobby_DIR server/lobby)
set(FLOCKD_LAYER_lobby_USES base sim proto config runtime store script room)

set(FLOCKD_LAYER_cluster_DIR server/cluster)
set(FLOCKD_LAYER_cluster_USES base sim proto stream runtime room)
set(FLOCKD_LAYER_cluster_SYSTEM nats/ cjson/)

set(FLOCKD_LAYER_net_DIR server/net)
set(FLOCKD_LAYER_net_USES base sim proto config stream runtime room lobby cluster)
set(FLOCKD_LAYER_net_SYSTEM libwebsockets.h ev.h openssl/)

set(FLOCKD_LAYER_app_DIR server/app)
set(FLOCKD_LAYER_app_USES base sim proto config stream runtime store script room lobby cluster net)
set(FLOCKD_LAYER_app_SYSTEM libwebsockets.h)

set(FLOCKD_LAYER_bench_DIR server/bench)
set(FLOCKD_LAYER_bench_USES base sim proto stream runtime script room)

set(FLOCKD_LAYER_cli_DIR client/cli)
set(FLOCKD_LAYER_cli_USES base/bytes.h sim/params.h proto)
set(FLOCKD_LAYER_cli_SYSTEM libwebsockets.h cjson/ openssl/)
