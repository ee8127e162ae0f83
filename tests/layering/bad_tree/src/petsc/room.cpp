// Breaks a policy on purpose (check_policies.py): spills a recording itself instead of making
// room through engine::make_room.
void make_my_own_room(Recording* r) {
  r->spill();
}
