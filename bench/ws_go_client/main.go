// The compiled baseline WebSocket client of bench/ws.py: gorilla/websocket, the Go library
// k6's WebSocket modules are built on (k6 itself is AGPL and not used here), without k6's
// JavaScript runtime on top. CONNECTIONS connections each keep IN_FLIGHT messages on the wire
// (a closed loop: each reply sends the next message) for DURATION seconds; prints the replies
// received.
//
//	ws-go-client URL CONNECTIONS IN_FLIGHT DURATION_S MESSAGE
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: ws-go-client URL CONNECTIONS IN_FLIGHT DURATION_S MESSAGE")
		os.Exit(2)
	}
	url := os.Args[1]
	connections, _ := strconv.Atoi(os.Args[2])
	inFlight, _ := strconv.Atoi(os.Args[3])
	seconds, _ := strconv.ParseFloat(os.Args[4], 64)
	message := []byte(os.Args[5])
	until := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var replies atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < connections; i++ {
		conn, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ws-go-client:", err)
			os.Exit(1)
		}
		wg.Add(1)
		go func(c *websocket.Conn) {
			defer wg.Done()
			defer c.Close()
			for k := 0; k < inFlight; k++ {
				if err := c.WriteMessage(websocket.TextMessage, message); err != nil {
					return
				}
			}
			for time.Now().Before(until) {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
				replies.Add(1)
				if err := c.WriteMessage(websocket.TextMessage, message); err != nil {
					return
				}
			}
		}(conn)
	}
	wg.Wait()
	fmt.Println(replies.Load())
}
