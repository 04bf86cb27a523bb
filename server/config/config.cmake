add_library(flockconfig STATIC ${CMAKE_CURRENT_LIST_DIR}/config.c)
target_include_directories(flockconfig PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(flockconfig PUBLIC cjson flocksim)
flockd_target_defaults(flockconfig)
