inline size_t header_gid(void) { return get_global_id(0); }
