// Synthetic test course: the portability header marker.
#pragma once
